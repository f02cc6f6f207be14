// Command bigtwo-starter is a Big Two Arena bot: a web server that answers the arena.
//
//	go run . [-port N] [-host H] [-secret S] [-path-prefix P]
//
// The port comes from -port, else the PORT environment variable, else 8000 (0: any free
// port; the address is printed). The secret comes from -secret, else BIGTWO_SECRET (several:
// comma-separated, e.g. "new,old" while you switch after a rotation).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func main() {
	port := flag.String("port", envOr("PORT", "8000"), "port to listen on ($PORT; 0: any free port)")
	host := flag.String("host", envOr("HOST", "127.0.0.1"), "address to listen on ($HOST)")
	secret := flag.String("secret", os.Getenv("BIGTWO_SECRET"),
		"the arena's signing secret(s), comma-separated ($BIGTWO_SECRET; none: nothing is checked)")
	prefix := flag.String("path-prefix", "", "serve the endpoints under this path only")
	flag.Parse()

	if n, err := strconv.Atoi(*port); err != nil || n < 0 || n > 65535 {
		fmt.Fprintf(os.Stderr, "%s: not a port: %q\n", BotName, *port)
		os.Exit(2)
	}
	bot := NewBot(ParseSecrets(*secret), *prefix)
	listener, err := net.Listen("tcp", net.JoinHostPort(*host, *port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", BotName, err)
		os.Exit(2)
	}
	checking := "not checking signatures"
	if len(bot.Secrets) > 0 {
		checking = "verifying signatures"
	}
	suffix := ""
	if p := strings.Trim(*prefix, "/"); p != "" {
		suffix = "/" + p
	}
	fmt.Fprintf(os.Stderr, "%s listening on http://%s%s (%s)\n", BotName, listener.Addr(), suffix, checking)

	server := NewServer(bot)
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(ctx)
	}()
	if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", BotName, err)
		os.Exit(1)
	}
}
