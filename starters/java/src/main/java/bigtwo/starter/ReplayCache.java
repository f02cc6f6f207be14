package bigtwo.starter;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The request ids this bot accepted in the last {@link Signing#REPLAY_WINDOW_S} seconds. Thread
 * safe; a {@link LinkedHashMap} keeps insertion order, so the oldest ids are forgotten first.
 * Only ids of correctly signed requests are stored, so strangers cannot fill it.
 */
public final class ReplayCache {
    private final long windowNanos;
    private final int maxEntries;
    private final LongSupplier clockNanos;
    private final LinkedHashMap<String, Long> seen = new LinkedHashMap<>();

    public ReplayCache() {
        this(Signing.REPLAY_WINDOW_S, Signing.REPLAY_CACHE_MAX, System::nanoTime);
    }

    /** A cache with its own window (seconds), size and clock (nanoseconds, monotonic). */
    public ReplayCache(long windowSeconds, int maxEntries, LongSupplier clockNanos) {
        this.windowNanos = windowSeconds * 1_000_000_000L;
        this.maxEntries = maxEntries;
        this.clockNanos = clockNanos;
    }

    public synchronized int size() {
        return seen.size();
    }

    /** Records {@code requestId}; false when it was already accepted within the window. */
    public synchronized boolean remember(String requestId) {
        long now = clockNanos.getAsLong();
        Iterator<Map.Entry<String, Long>> oldest = seen.entrySet().iterator();
        while (oldest.hasNext()) {
            Map.Entry<String, Long> entry = oldest.next();
            if (now - entry.getValue() <= windowNanos && seen.size() < maxEntries) {
                break;
            }
            oldest.remove();
        }
        if (seen.containsKey(requestId)) {
            return false;
        }
        seen.put(requestId, now);
        return true;
    }
}
