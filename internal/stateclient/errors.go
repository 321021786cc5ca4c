package stateclient

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error New returns for a bad Config:
	// the user must fix the configuration, retrying cannot help.
	ErrInvalidConfig = errors.New("invalid state client configuration")
	// ErrUnauthorized matches a 401 answer: the endpoint requires auth.
	ErrUnauthorized = errors.New("HTTP remote state endpoint requires auth")
	// ErrForbidden matches a 403 answer: the credentials were refused.
	ErrForbidden = errors.New("HTTP remote state endpoint invalid auth")
	// ErrStateTooLarge matches a *SizeError.
	ErrStateTooLarge = errors.New("state too large")
	// ErrUnlockDisabled is returned by ForceUnlock when Config.UnlockAddress
	// is empty: nothing can be unlocked, and claiming success would be wrong.
	ErrUnlockDisabled = errors.New("unlocking is disabled: no unlock address is configured")
	// ErrRedirectRefused matches a redirect the client does not follow: one
	// to another scheme, host or port than the address's. It is not
	// retried, and its text does not quote the Location.
	ErrRedirectRefused = errors.New("redirect refused")
	// ErrBodyMismatch matches an UpdateFrom whose body does not hold the
	// size or the MD5 it was given: the caller's file is not the state it
	// meant to write. It is not retried.
	ErrBodyMismatch = errors.New("the state body does not match its size or MD5")
)

// StatusError is an answer with a status code the operation does not
// accept. It matches ErrUnauthorized for 401 and ErrForbidden for 403.
type StatusError struct {
	// Method is the request method.
	Method string
	// URL is the address asked for, as scheme://host/path: no userinfo,
	// query or fragment, and never a redirect's Location.
	URL string
	// StatusCode is the answer's status code.
	StatusCode int
}

// Error implements error.
func (e *StatusError) Error() string {
	var what string
	switch e.StatusCode {
	case http.StatusUnauthorized:
		what = ErrUnauthorized.Error()
	case http.StatusForbidden:
		what = ErrForbidden.Error()
	default:
		what = "unexpected HTTP response"
	}
	return fmt.Sprintf("%s %s: %s (%d %s)", e.Method, e.URL, what, e.StatusCode, http.StatusText(e.StatusCode))
}

// Is reports whether the status matches ErrUnauthorized or ErrForbidden.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	}
	return false
}

// RetryError reports a request that failed on every attempt: retries ran
// out on transport errors or retryable answers (429 and 5xx except 501),
// or a transport error that is not retried (such as a TLS certificate
// error, a refused redirect or an address the dial function denied). Err
// is the last transport error or a *StatusError. A transport error is a
// *url.Error whose URL is this URL and whose cause's text holds neither
// bytes of an answer nor the client's secrets; errors.Is and errors.As
// still reach the original cause (net.Error, TLS errors, sentinels).
type RetryError struct {
	// Method is the request method.
	Method string
	// URL is the address asked for, as scheme://host/path: no userinfo,
	// query or fragment, and never a redirect's Location.
	URL string
	// Attempts is the number of attempts made.
	Attempts int
	// Err is the last error.
	Err error
}

// Error implements error, as "<METHOD> <url> giving up after N attempt(s)"
// followed by the last error, the message Terraform users know.
func (e *RetryError) Error() string {
	msg := fmt.Sprintf("%s %s giving up after %d attempt(s)", e.Method, e.URL, e.Attempts)
	var se *StatusError
	switch {
	case errors.As(e.Err, &se):
		return fmt.Sprintf("%s: last answer %d %s", msg, se.StatusCode, http.StatusText(se.StatusCode))
	case e.Err != nil:
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *RetryError) Unwrap() error { return e.Err }

// SizeError reports a state larger than Config.MaxStateBytes. It matches
// ErrStateTooLarge.
type SizeError struct {
	// Limit is the configured maximum in bytes.
	Limit int64
	// ContentLength is the announced size when the server sent one, else -1.
	ContentLength int64
}

// Error implements error.
func (e *SizeError) Error() string {
	msg := fmt.Sprintf("state is larger than the %s limit", formatBytes(e.Limit))
	if e.ContentLength >= 0 {
		msg += fmt.Sprintf(" (Content-Length %d)", e.ContentLength)
	}
	return msg
}

// Is reports whether target is ErrStateTooLarge.
func (e *SizeError) Is(target error) bool { return target == ErrStateTooLarge }

// formatBytes prints n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
