package stateclient

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults, as Terraform's http backend defines them. They are the one Go
// source of these defaults: the HttpBackend CRD's markers spell them out
// (api/v1alpha1's defaults_test.go checks them against these constants),
// and render leaves a value equal to one out of the rendered files.
const (
	DefaultUpdateMethod  = "POST"
	DefaultLockMethod    = "LOCK"
	DefaultUnlockMethod  = "UNLOCK"
	DefaultRetryMax      = 2
	DefaultRetryWaitMin  = 1 * time.Second //nolint:revive // Min is minimum (Terraform's retry_wait_min), not minutes
	DefaultRetryWaitMax  = 30 * time.Second
	DefaultMaxStateBytes = 64 << 20
)

// Config mirrors the attributes of Terraform's http backend. Secrets are
// given as values (read from Kubernetes Secrets), never as file paths.
//
// Zero values are taken literally except where noted: RetryMax 0 means a
// single attempt and zero waits mean no wait. Start from DefaultConfig for
// Terraform's defaults (2 retries, 1 s, 30 s).
type Config struct {
	// Address is the state URL (http or https). Required. The client prints
	// it, and every URL, as scheme://host/path only: its userinfo (sent, as
	// net/http would, as basic auth when Username is empty), query and
	// fragment are never printed.
	Address string
	// UpdateMethod is the method of Update; empty means POST.
	UpdateMethod string
	// LockAddress is the lock URL; empty disables locking.
	LockAddress string
	// LockMethod is the method of Lock; empty means LOCK.
	LockMethod string
	// UnlockAddress is the unlock URL; empty makes Unlock a no-op.
	UnlockAddress string
	// UnlockMethod is the method of Unlock and ForceUnlock; empty means UNLOCK.
	UnlockMethod string

	// Username enables basic auth when non-empty.
	Username string
	// Password is the basic auth password.
	Password string

	// RetryMax is the number of retries after the first attempt.
	RetryMax int
	// RetryWaitMin is the first wait between attempts; it doubles each time.
	RetryWaitMin time.Duration
	// RetryWaitMax caps the wait between attempts, a Retry-After included.
	RetryWaitMax time.Duration
	// AttemptTimeout bounds each attempt, from the dial to the end of the
	// answer's body; 0 means no bound, as in Terraform. An attempt that
	// times out before the answer's headers is retried like any transport
	// error. The error is a net.Error whose Timeout() is true and matches
	// context.DeadlineExceeded.
	AttemptTimeout time.Duration

	// SkipCertVerification disables server certificate verification.
	SkipCertVerification bool
	// ClientCertificatePEM and ClientPrivateKeyPEM are a client certificate
	// for mutual TLS: both or neither, and they must match.
	ClientCertificatePEM []byte
	// ClientPrivateKeyPEM is the private key of ClientCertificatePEM.
	ClientPrivateKeyPEM []byte
	// ClientCACertificatePEM, when set, replaces the system roots for
	// verifying the server.
	ClientCACertificatePEM []byte

	// MaxStateBytes bounds the size of a state read; 0 means
	// DefaultMaxStateBytes (64 MiB).
	MaxStateBytes int64
}

// DefaultConfig returns a Config for address with Terraform's defaults.
func DefaultConfig(address string) Config {
	return Config{
		Address:       address,
		UpdateMethod:  DefaultUpdateMethod,
		LockMethod:    DefaultLockMethod,
		UnlockMethod:  DefaultUnlockMethod,
		RetryMax:      DefaultRetryMax,
		RetryWaitMin:  DefaultRetryWaitMin,
		RetryWaitMax:  DefaultRetryWaitMax,
		MaxStateBytes: DefaultMaxStateBytes,
	}
}

// String describes the configuration without any secret: addresses as
// scheme://host/path, secrets as set or unset.
func (c Config) String() string {
	return fmt.Sprintf("stateclient.Config{Address: %q, LockAddress: %q, UnlockAddress: %q, Username: %q, Password: %s, ClientCertificate: %s, ClientPrivateKey: %s, ClientCA: %s}",
		printableRaw(c.Address), printableRaw(c.LockAddress), printableRaw(c.UnlockAddress), c.Username,
		present(c.Password != ""), present(len(c.ClientCertificatePEM) > 0), present(len(c.ClientPrivateKeyPEM) > 0), present(len(c.ClientCACertificatePEM) > 0))
}

// GoString is String, so %#v does not print secrets either.
func (c Config) GoString() string { return c.String() }

// MarshalLog implements logr.Marshaler so structured loggers never see secrets.
func (c Config) MarshalLog() any { return c.String() }

func present(ok bool) string {
	if ok {
		return "<set>"
	}
	return "<unset>"
}

// endpoint is a validated URL with its userinfo removed.
type endpoint struct {
	url       *url.URL      // without userinfo
	user      *url.Userinfo // from the address, nil when none
	printable string        // scheme://host/path, for errors and logs
}

// parseAddress validates an http(s) URL. Parse errors are not wrapped when
// the address may hold a password, a query or a fragment: they quote the
// input.
func parseAddress(field, raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "@?#") {
			return endpoint{}, fmt.Errorf("%w: %s is not a valid URL", ErrInvalidConfig, field)
		}
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return endpoint{}, fmt.Errorf("%w: %s %q is not a valid URL: %w", ErrInvalidConfig, field, raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, fmt.Errorf("%w: %s must be an http or https URL, got scheme %q", ErrInvalidConfig, field, u.Scheme)
	}
	if u.Host == "" {
		return endpoint{}, fmt.Errorf("%w: %s %q has no host", ErrInvalidConfig, field, printableURL(u))
	}
	e := endpoint{url: u, user: u.User, printable: printableURL(u)}
	if u.User != nil {
		clean := *u
		clean.User = nil
		e.url = &clean
	}
	return e, nil
}

// checkMethod validates an HTTP method token (RFC 9110 tchar).
func checkMethod(field, m string) error {
	if m == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidConfig, field)
	}
	for i := range len(m) {
		c := m[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Errorf("%w: %s %q is not a valid HTTP method", ErrInvalidConfig, field, m)
	}
	return nil
}

// withDefaults fills the methods and the size limit, and validates the rest.
func (c Config) withDefaults() (Config, error) {
	if c.UpdateMethod == "" {
		c.UpdateMethod = DefaultUpdateMethod
	}
	if c.LockMethod == "" {
		c.LockMethod = DefaultLockMethod
	}
	if c.UnlockMethod == "" {
		c.UnlockMethod = DefaultUnlockMethod
	}
	if c.MaxStateBytes == 0 {
		c.MaxStateBytes = DefaultMaxStateBytes
	}
	var errs []error
	errs = append(errs,
		checkMethod("update method", c.UpdateMethod),
		checkMethod("lock method", c.LockMethod),
		checkMethod("unlock method", c.UnlockMethod))
	if c.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("%w: retry max %d is negative", ErrInvalidConfig, c.RetryMax))
	}
	if c.RetryWaitMin < 0 || c.RetryWaitMax < 0 {
		errs = append(errs, fmt.Errorf("%w: retry waits must not be negative", ErrInvalidConfig))
	}
	if c.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: attempt timeout %v is negative", ErrInvalidConfig, c.AttemptTimeout))
	}
	if c.MaxStateBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: max state bytes %d is negative", ErrInvalidConfig, c.MaxStateBytes))
	}
	return c, errors.Join(errs...)
}
