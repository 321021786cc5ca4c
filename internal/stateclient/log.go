package stateclient

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
)

// retryLogger adapts logr to retryablehttp.LeveledLogger, redacting what
// go-retryablehttp logs: it prints request URLs with their query (which
// may hold a token) and transport errors whose text may quote a redirect's
// Location or bytes of an answer. Every URL is printed as
// scheme://host/path, every error as its cleaned cause, and every string
// is cleaned of the client's secrets.
type retryLogger struct {
	log     logr.Logger
	secrets secrets
}

func (l retryLogger) Error(msg string, kv ...any) { l.emit(1, msg, kv) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.emit(1, msg, kv) }
func (l retryLogger) Info(msg string, kv ...any)  { l.emit(1, msg, kv) }
func (l retryLogger) Debug(msg string, kv ...any) { l.emit(2, msg, kv) }

// emit cleans and logs a line at level. go-retryablehttp logs every
// attempt, so nothing is cleaned for a level that is off.
func (l retryLogger) emit(level int, msg string, kv []any) {
	log := l.log.V(level)
	if !log.Enabled() {
		return
	}
	clean := make([]any, len(kv))
	for i, v := range kv {
		if i%2 == 0 { // a key, set by the library
			clean[i] = v
			continue
		}
		clean[i] = l.value(v)
	}
	log.Info(capitalize(l.text(msg)), clean...)
}

// value returns a log value without secrets, query or server bytes.
func (l retryLogger) value(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case *url.URL:
		return printableURL(v)
	case error:
		if ue, ok := errors.AsType[*url.Error](v); ok { // the URL is logged under its own key
			return ue.Op + ": " + l.secrets.cleanCause(ue.Err).Error()
		}
		return l.secrets.cleanCause(v).Error()
	case string:
		return l.text(v)
	case fmt.Stringer:
		return l.text(v.String())
	}
	return v
}

// text cleans a string: printable URLs, no secret.
func (l retryLogger) text(s string) string {
	return l.secrets.scrub(printableURLsIn(s))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
