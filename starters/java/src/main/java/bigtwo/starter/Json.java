package bigtwo.starter;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.TypeAdapter;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * JSON in and out with Gson, strictly: a body must be UTF-8 and one JSON object, with no
 * comments, single quotes, unquoted names, NaN or trailing data (Gson's {@code fromJson} alone
 * is lenient about all of these).
 */
public final class Json {
    /** Serialises records; null fields are left out. */
    public static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    private static final TypeAdapter<JsonElement> ELEMENTS = GSON.getAdapter(JsonElement.class);

    private Json() {}

    /** A body that is not a JSON object of the expected shape. */
    public static final class BadJson extends Exception {
        private static final long serialVersionUID = 1L;

        public BadJson(String message) {
            super(message);
        }
    }

    /** The body as a JSON object. */
    public static JsonObject parseObject(byte[] body) throws BadJson {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new BadJson("the body must be UTF-8");
        }
        try {
            JsonReader reader = new JsonReader(new StringReader(text));
            reader.setLenient(false);
            JsonElement element = ELEMENTS.read(reader);
            if (reader.peek() != JsonToken.END_DOCUMENT || !element.isJsonObject()) {
                throw new BadJson("the body must be a JSON object");
            }
            return element.getAsJsonObject();
        } catch (IOException | RuntimeException e) {
            throw new BadJson("the body must be a JSON object");
        }
    }

    /** The object as a record of {@code type}. */
    public static <T> T read(JsonObject object, Class<T> type) throws BadJson {
        try {
            return GSON.fromJson(object, type);
        } catch (JsonParseException | IllegalStateException | NumberFormatException e) {
            throw new BadJson("the body does not have the shape of a " + type.getSimpleName()
                    + ": " + e.getMessage());
        }
    }
}
