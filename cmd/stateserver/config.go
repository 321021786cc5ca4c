package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
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
	headerTimeout   time.Duration
	// memoryBudgetMiB bounds the memory store (without --data-dir).
	memoryBudgetMiB int64
	// maxConnections bounds the connections served at once.
	maxConnections int
	// modes are the lock behaviour flags, and modeOptions the server
	// options they choose.
	modes       modeFlags
	modeOptions []stateserver.Option
}

const (
	// defaultHeaderTimeout is the default of --header-timeout, which bounds
	// the reading of a request's headers: a client that trickles them
	// holds a connection that long at most.
	defaultHeaderTimeout = 10 * time.Second
	// defaultMaxConnections is the default of --max-connections: far more
	// than the operator and Terraform open, far fewer descriptors than a
	// process may hold.
	defaultMaxConnections = 512
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
	fs.DurationVar(&cfg.headerTimeout, "header-timeout", defaultHeaderTimeout,
		"how long a client may take to send a request's headers (and the TLS handshake) before the connection is closed")
	fs.IntVar(&cfg.maxConnections, "max-connections", defaultMaxConnections,
		"most connections served at once; more wait until one closes")
	fs.Int64Var(&cfg.memoryBudgetMiB, "memory-budget-mib", stateserver.DefaultMemoryBudget>>20,
		"without --data-dir, most MiB of states kept in memory, uploads in progress included; "+
			"a write past it gets 507 Insufficient Storage")
	cfg.modes.register(fs)
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
	case cfg.headerTimeout <= 0:
		return config{}, fmt.Errorf("%w: --header-timeout must be positive", errUsage)
	case cfg.maxConnections <= 0:
		return config{}, fmt.Errorf("%w: --max-connections must be positive", errUsage)
	case cfg.memoryBudgetMiB <= 0 || cfg.memoryBudgetMiB > math.MaxInt64>>20:
		return config{}, fmt.Errorf("%w: --memory-budget-mib must be positive", errUsage)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["memory-budget-mib"] && cfg.dataDir != "" {
		return config{}, fmt.Errorf("%w: --memory-budget-mib has no effect with --data-dir", errUsage)
	}
	opts, err := cfg.modes.options(set, cfg.username, cfg.password)
	if err != nil {
		return config{}, err
	}
	cfg.modeOptions = opts
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
