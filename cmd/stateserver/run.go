package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/infrastate/backend-operator/internal/stateserver"
)

// newStore opens the directory store of cfg, or a memory store within its
// budget when there is none.
func newStore(cfg config) (stateserver.Store, error) {
	if cfg.dataDir == "" {
		return stateserver.NewMemoryStore(stateserver.WithMemoryBudget(cfg.memoryBudgetMiB << 20)), nil
	}
	s, err := stateserver.NewDirStore(cfg.dataDir)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory: %w", err)
	}
	return s, nil
}

// run serves until ctx is done, then shuts down gracefully. Logs, including
// the "listening on <url>" line with the bound address, go to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := newServer(cfg, logger)
	if err != nil {
		return err
	}
	useTLS := srv.TLSConfig != nil // read before serving, which may set it
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	ln = newLimitListener(ln, cfg.maxConnections)
	warnIfOpen(stderr, cfg, ln.Addr())
	logListening(logger, cfg, ln.Addr(), useTLS)

	served := serve(srv, ln, useTLS)
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	return shutDown(ctx, srv, served, cfg.shutdownTimeout, logger)
}

// newServer opens the store of cfg and loads its TLS configuration, and
// returns the HTTP server of the state server on them, logging to logger.
func newServer(cfg config, logger *slog.Logger) (*http.Server, error) {
	store, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	handler := stateserver.New(store, handlerOptions(cfg, tlsConfig != nil, logger)...)
	return &http.Server{
		Handler:           progressDeadlines{next: handler, timeout: cfg.bodyTimeout},
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: cfg.headerTimeout,
		IdleTimeout:       cfg.idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}, nil
}

// handlerOptions returns the state server's options for cfg: its logger,
// its lock behaviours and, with a username, basic auth (or GitLab's token
// auth), warning when the password would travel in clear text (useTLS
// false).
func handlerOptions(cfg config, useTLS bool, logger *slog.Logger) []stateserver.Option {
	opts := append([]stateserver.Option{stateserver.WithLogger(logger)}, cfg.modeOptions...)
	if cfg.username == "" {
		return opts
	}
	if !cfg.modes.gitlab {
		opts = append(opts, stateserver.WithBasicAuth(cfg.username, cfg.password))
	}
	if !useTLS {
		logger.Warn("basic auth without TLS sends the password in clear text")
	}
	return opts
}

// warnIfOpen prints a WARNING to stderr when the server authenticates no
// client and listens on addr, an address other than a loopback one.
func warnIfOpen(stderr io.Writer, cfg config, addr net.Addr) {
	if cfg.username == "" && cfg.clientCA == "" && !isLoopback(addr) {
		_, _ = fmt.Fprintf(stderr, "WARNING: anyone who can reach %s can read and overwrite every state: "+
			"no client is authenticated (set --username with $%s, or --client-ca), "+
			"and the address is not a loopback one\n", addr, passwordEnv)
	}
}

// logListening logs the "listening on <url>" line with the bound address
// addr, and how the server stores states and authenticates clients.
func logListening(logger *slog.Logger, cfg config, addr net.Addr, useTLS bool) {
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	logger.Info("listening on "+scheme+"://"+addr.String(),
		"store", storeKind(cfg),
		"max_connections", cfg.maxConnections,
		"basic_auth", cfg.username != "",
		"tls", useTLS,
		"client_certificates", cfg.clientCA != "",
		"mode", cfg.modes.describe())
}

// serve serves ln with srv, over TLS when useTLS is true, in a goroutine
// of its own, and returns the channel that receives what serving returned.
func serve(srv *http.Server, ln net.Listener, useTLS bool) <-chan error {
	served := make(chan error, 1)
	go func() {
		if useTLS {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	return served
}

// shutDown stops srv gracefully, waiting up to timeout for the requests in
// flight (and closing it when they outlast it), then waits for serving to
// end with its result on served.
func shutDown(ctx context.Context, srv *http.Server, served <-chan error, timeout time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "timeout", timeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// isLoopback reports whether addr is a loopback address; the unspecified
// address (all interfaces) is not.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// storeKind names the store of cfg in the log: memory: and its budget, or
// dir: and the directory.
func storeKind(cfg config) string {
	if cfg.dataDir == "" {
		return fmt.Sprintf("memory:%dMiB", cfg.memoryBudgetMiB)
	}
	return "dir:" + cfg.dataDir
}
