package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/infrastate/backend-operator/internal/conformance"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// conformanceCommand is the name of the subcommand that checks a server.
const conformanceCommand = "conformance"

// addressPlaceholder stands for the checked state's address in
// --lock-address and --unlock-address.
const addressPlaceholder = "{address}"

// conformanceConfig is the parsed command line of the conformance
// subcommand.
type conformanceConfig struct {
	base        string // the URL as given
	useURL      bool   // check the URL itself, not a scratch state under it
	scratchName string
	client      stateclient.Config
	timeout     time.Duration
}

// parseConformance reads the subcommand's flags and URL, the password from
// the environment variable --password-env names, and the TLS files.
func parseConformance(args []string, getenv func(string) string, stderr io.Writer) (conformanceConfig, error) {
	var cfg conformanceConfig
	var passwordEnv, lockAddr, unlockAddr, lockMethod, unlockMethod, serverCA, clientCert, clientKey string
	var gitlab bool
	fs := flag.NewFlagSet("stateserver conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: stateserver conformance URL [flags]\n\n"+
			"Checks how the REST state server at URL answers the lock protocol, on a scratch state\n"+
			"URL/<scratch name> it removes when done (or URL itself with --use-url), and prints what\n"+
			"the server does and what the operator's lock features do there. Flags may follow URL.")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.client.Username, "username", "", "basic auth user name")
	fs.StringVar(&passwordEnv, "password-env", "TF_HTTP_PASSWORD", "environment variable holding the basic auth password (or GitLab access token)")
	fs.StringVar(&lockAddr, "lock-address", addressPlaceholder, "lock address; "+addressPlaceholder+" stands for the checked state's address")
	fs.StringVar(&unlockAddr, "unlock-address", addressPlaceholder, "unlock address; "+addressPlaceholder+" stands for the checked state's address")
	fs.StringVar(&lockMethod, "lock-method", stateclient.DefaultLockMethod, "lock method")
	fs.StringVar(&unlockMethod, "unlock-method", stateclient.DefaultUnlockMethod, "unlock method")
	fs.BoolVar(&gitlab, "gitlab", false, "GitLab's managed state: lock and unlock at "+addressPlaceholder+"/lock with POST and DELETE")
	fs.BoolVar(&cfg.useURL, "use-url", false, "check the state at URL itself, which must be free, instead of a scratch state under it; nothing is removed")
	fs.StringVar(&cfg.scratchName, "scratch-name", "", "name of the scratch state under URL; default conformance-<random>")
	fs.StringVar(&serverCA, "server-ca", "", "PEM CA bundle that signed the server's certificate (replaces the system roots)")
	fs.StringVar(&clientCert, "tls-cert", "", "PEM client certificate for mutual TLS (needs --tls-key)")
	fs.StringVar(&clientKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.BoolVar(&cfg.client.SkipCertVerification, "skip-cert-verification", false, "do not verify the server's certificate")
	fs.IntVar(&cfg.client.RetryMax, "retry-max", stateclient.DefaultRetryMax, "retries of a request that failed on the network or with 429 or 5xx")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "how long the whole check may take")
	target, rest := splitURL(args)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case target == "" || fs.NArg() > 0:
		return cfg, fmt.Errorf("%w: stateserver conformance takes one URL, then flags", errUsage)
	case gitlab && (lockAddr != addressPlaceholder || unlockAddr != addressPlaceholder ||
		lockMethod != stateclient.DefaultLockMethod || unlockMethod != stateclient.DefaultUnlockMethod):
		return cfg, fmt.Errorf("%w: --gitlab sets the lock and unlock addresses and methods itself", errUsage)
	case cfg.useURL && cfg.scratchName != "":
		return cfg, fmt.Errorf("%w: --use-url and --scratch-name exclude each other", errUsage)
	case (clientCert == "") != (clientKey == ""):
		return cfg, fmt.Errorf("%w: --tls-cert and --tls-key must be given together", errUsage)
	case cfg.timeout <= 0:
		return cfg, fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	if gitlab {
		lockAddr, unlockAddr = addressPlaceholder+"/lock", addressPlaceholder+"/lock"
		lockMethod, unlockMethod = http.MethodPost, http.MethodDelete
	}
	cfg.base = target
	if cfg.scratchName == "" && !cfg.useURL {
		cfg.scratchName = "conformance-" + randomHex()
	}
	address := strings.TrimSuffix(target, "/") + "/" + cfg.scratchName
	if cfg.useURL {
		address = target
	}
	for _, a := range []*string{&lockAddr, &unlockAddr} {
		if !cfg.useURL && !strings.Contains(*a, addressPlaceholder) {
			return cfg, fmt.Errorf("%w: a lock or unlock address without %s would lock another state than the scratch one (or pass --use-url)", errUsage, addressPlaceholder)
		}
		*a = strings.ReplaceAll(*a, addressPlaceholder, address)
	}
	cfg.client.Address, cfg.client.LockAddress, cfg.client.UnlockAddress = address, lockAddr, unlockAddr
	cfg.client.LockMethod, cfg.client.UnlockMethod = lockMethod, unlockMethod
	cfg.client.Password = getenv(passwordEnv)
	cfg.client.RetryWaitMin, cfg.client.RetryWaitMax = 200*time.Millisecond, 2*time.Second
	if err := readTLSFiles(&cfg.client, serverCA, clientCert, clientKey); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// splitURL returns the first argument that is not a flag, as the URL, and
// the other arguments, so that flags may come before or after the URL.
func splitURL(args []string) (string, []string) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") && (i == 0 || !flagTakesValue(args[i-1])) {
			return a, append(append([]string{}, args[:i]...), args[i+1:]...)
		}
	}
	return "", args
}

// flagTakesValue reports whether arg is a flag whose value is the next
// argument: any flag but the booleans, unless written --flag=value.
func flagTakesValue(arg string) bool {
	if !strings.HasPrefix(arg, "-") || strings.Contains(arg, "=") {
		return false
	}
	switch strings.TrimLeft(arg, "-") {
	case "gitlab", "use-url", "skip-cert-verification", "help", "h":
		return false
	}
	return true
}

// readTLSFiles loads the PEM files into cfg.
func readTLSFiles(cfg *stateclient.Config, serverCA, clientCert, clientKey string) error {
	for _, f := range []struct {
		path string
		into *[]byte
	}{{serverCA, &cfg.ClientCACertificatePEM}, {clientCert, &cfg.ClientCertificatePEM}, {clientKey, &cfg.ClientPrivateKeyPEM}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.path, err)
		}
		*f.into = b
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// errCheckIncomplete marks a check that could not run to its end: the
// report says why.
var errCheckIncomplete = errors.New("the check did not complete")

// runConformance runs the conformance subcommand: the check, then the
// report on stdout. It returns errCheckIncomplete (wrapped) when the check
// did not complete, and errUsage for a bad command line.
func runConformance(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConformance(args, getenv, stderr)
	if err != nil {
		return err
	}
	c, err := stateclient.New(cfg.client)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	if !cfg.useURL {
		if status, err := c.FetchStatus(ctx); err != nil {
			return fmt.Errorf("reading the scratch state: %w", err)
		} else if status == http.StatusOK {
			return fmt.Errorf("a state already exists at the scratch address %s: choose another --scratch-name", printable(cfg.client.Address))
		}
	}
	res, checkErr := conformance.Check(ctx, c, conformance.Options{Who: "stateserver-conformance"})
	r := report{target: printable(cfg.base), result: res, err: checkErr}
	if cfg.useURL {
		r.state = "the state at the URL itself (not removed)"
	} else {
		r.state = "the scratch state " + cfg.scratchName + removeScratch(ctx, c, res)
	}
	if err := r.print(stdout); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if checkErr != nil {
		return fmt.Errorf("%w: %w", errCheckIncomplete, checkErr)
	}
	return nil
}

// removeScratch deletes the scratch state, unless the check took no lock
// (so created nothing) or left one on it, and says what became of it.
func removeScratch(ctx context.Context, c *stateclient.Client, res conformance.Result) string {
	locked := slices.ContainsFunc(res.Steps, func(s conformance.Step) bool {
		return strings.HasPrefix(s.Request, "LOCK") && s.Status == http.StatusOK
	})
	switch {
	case !locked:
		return " (the check took no lock, so created nothing)"
	case len(res.LeftLocks) > 0:
		return " (kept: the check's lock is still on it)"
	}
	if err := c.Purge(context.WithoutCancel(ctx)); err != nil {
		return fmt.Sprintf(" (not removed: %v)", err)
	}
	return " (removed)"
}

// printable is u as scheme://host/path: no credentials, no query.
func printable(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
