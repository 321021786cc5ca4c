package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/infrastate/backend-operator/internal/stateserver"
)

// passwordEnv names the environment variable holding the basic auth
// password, kept out of the command line (and so out of ps).
const passwordEnv = "STATESERVER_PASSWORD"

// errUsage marks errors in the command line or environment.
var errUsage = errors.New("usage")

// config is the parsed command line.
type config struct {
	listen          string
	dataDir         string
	username        string
	password        string
	tlsCert         string
	tlsKey          string
	clientCA        string
	shutdownTimeout time.Duration
	bodyTimeout     time.Duration
	idleTimeout     time.Duration
}

const (
	// readHeaderTimeout bounds the reading of a request's headers.
	readHeaderTimeout = 10 * time.Second
	// defaultBodyTimeout is the default of --body-timeout: long enough for
	// any pause of a working client on a slow link, short enough to let go
	// of stalled ones.
	defaultBodyTimeout = time.Minute
	// defaultIdleTimeout is the default of --idle-timeout: longer than the
	// 90s after which Go clients (Terraform, the operator) close idle
	// connections themselves, so that they close first.
	defaultIdleTimeout = 2 * time.Minute
)

// parseConfig reads the flags in args and the password from getenv, and
// checks that they make sense together.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("stateserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "address to listen on; port 0 picks a free port (the log says which)")
	fs.StringVar(&cfg.dataDir, "data-dir", "", "directory keeping states and locks across restarts; empty keeps them in memory")
	fs.StringVar(&cfg.username, "username", "", "require basic auth with this username; the password comes from $"+passwordEnv)
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM certificate file; serve HTTPS (needs --tls-key)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.StringVar(&cfg.clientCA, "client-ca", "", "PEM CA bundle; require client certificates signed by it (mutual TLS, needs --tls-cert)")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful shutdown waits for requests in flight")
	fs.DurationVar(&cfg.bodyTimeout, "body-timeout", defaultBodyTimeout,
		"how long a request body may stop arriving, or a response stop being read, before the connection is closed; "+
			"every transfer restarts it, so slow but steady uploads of large states are not cut")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", defaultIdleTimeout, "how long an idle keep-alive connection is kept open")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	cfg.password = getenv(passwordEnv)

	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case cfg.username != "" && cfg.password == "":
		return config{}, fmt.Errorf("%w: --username is set but $%s is empty", errUsage, passwordEnv)
	case cfg.username == "" && cfg.password != "":
		return config{}, fmt.Errorf("%w: $%s is set but --username is not", errUsage, passwordEnv)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return config{}, fmt.Errorf("%w: --tls-cert and --tls-key must be given together", errUsage)
	case cfg.clientCA != "" && cfg.tlsCert == "":
		return config{}, fmt.Errorf("%w: --client-ca needs --tls-cert and --tls-key", errUsage)
	case cfg.shutdownTimeout <= 0:
		return config{}, fmt.Errorf("%w: --shutdown-timeout must be positive", errUsage)
	case cfg.bodyTimeout <= 0:
		return config{}, fmt.Errorf("%w: --body-timeout must be positive", errUsage)
	case cfg.idleTimeout <= 0:
		return config{}, fmt.Errorf("%w: --idle-timeout must be positive", errUsage)
	}
	return cfg, nil
}

// tlsConfig loads the certificates; it returns nil when TLS is off.
func (cfg config) tlsConfig() (*tls.Config, error) {
	if cfg.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate: %w", err)
	}
	tc := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
	}
	if cfg.clientCA != "" {
		pem, err := os.ReadFile(cfg.clientCA)
		if err != nil {
			return nil, fmt.Errorf("reading the client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in the client CA file %s", cfg.clientCA)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// newStore opens the directory store, or a memory store when dir is empty.
func newStore(dir string) (stateserver.Store, error) {
	if dir == "" {
		return stateserver.NewMemoryStore(), nil
	}
	s, err := stateserver.NewDirStore(dir)
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

	store, err := newStore(cfg.dataDir)
	if err != nil {
		return err
	}
	tlsConfig, err := cfg.tlsConfig()
	if err != nil {
		return err
	}
	opts := []stateserver.Option{stateserver.WithLogger(logger)}
	if cfg.username != "" {
		opts = append(opts, stateserver.WithBasicAuth(cfg.username, cfg.password))
		if tlsConfig == nil {
			logger.Warn("basic auth without TLS sends the password in clear text")
		}
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	if cfg.username == "" && cfg.clientCA == "" && !isLoopback(ln.Addr()) {
		_, _ = fmt.Fprintf(stderr, "WARNING: anyone who can reach %s can read and overwrite every state: "+
			"no client is authenticated (set --username with $%s, or --client-ca), "+
			"and the address is not a loopback one\n", ln.Addr(), passwordEnv)
	}
	srv := &http.Server{
		Handler:           progressDeadlines{next: stateserver.New(store, opts...), timeout: cfg.bodyTimeout},
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       cfg.idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	logger.Info("listening on "+scheme+"://"+ln.Addr().String(),
		"store", storeKind(cfg.dataDir),
		"basic_auth", cfg.username != "",
		"tls", tlsConfig != nil,
		"client_certificates", cfg.clientCA != "")

	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", cfg.shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
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

func storeKind(dataDir string) string {
	if dataDir == "" {
		return "memory"
	}
	return "dir:" + dataDir
}
