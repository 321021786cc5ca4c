package stateclient

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/infrastate/backend-operator/internal/redact"
)

// redacted replaces a secret or bytes of an answer in printed text.
const redacted = "[redacted]"

// printableURL prints u as scheme://host/path: no userinfo, no query (it
// may hold a token), no fragment.
func printableURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// printableRaw prints a URL given as text as printableURL does. Text that
// does not parse is printed only when it has nothing to hide.
func printableRaw(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "@?#") {
			return "<unparsable URL>"
		}
		return raw
	}
	return printableURL(u)
}

// printableURLsIn replaces every http or https URL in s (up to a space or a
// quote) with its printable form: it cleans text written by libraries,
// such as go-retryablehttp's log lines.
func printableURLsIn(s string) string {
	var b strings.Builder
	for {
		i := indexURL(s)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end := strings.IndexAny(s[i:], " \t\r\n\"'`<>")
		if end < 0 {
			end = len(s) - i
		}
		b.WriteString(printableRaw(s[i : i+end]))
		s = s[i+end:]
	}
}

// indexURL returns the index of the first "http://" or "https://" in s,
// whatever the case, or -1.
func indexURL(s string) int {
	lower := strings.ToLower(s)
	i, j := strings.Index(lower, "http://"), strings.Index(lower, "https://")
	switch {
	case i < 0:
		return j
	case j < 0:
		return i
	}
	return min(i, j)
}

// stripQuoted replaces every double-quoted segment of s, as Go's %q
// writes it, with [redacted]. Errors of net/http, net/textproto and
// encoding/json quote the bytes they could not read that way.
func stripQuoted(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	var b strings.Builder
	for {
		start := strings.IndexByte(s, '"')
		if start < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:start])
		b.WriteString(redacted)
		end := closingQuote(s, start+1)
		if end < 0 {
			return b.String()
		}
		s = s[end+1:]
	}
}

// closingQuote returns the index of the unescaped '"' closing a quoted
// string that starts at i, or -1.
func closingQuote(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// shortSecretLen is the length under which a secret is replaced only where
// it stands alone: a short value (a query "x=1") would otherwise eat
// letters and digits out of every message.
const shortSecretLen = 8

// secrets are the client's own secret strings, in every form in which they
// may come back: the passwords, user:password pairs, their base64 basic
// auth values and the addresses' query values, raw, escaped for URLs, Go
// quoting and JSON. The client removes them from every text it returns, so
// that a server echoing what it received cannot make the client hand
// credentials to whoever reads its errors or LockInfo.
//
// They are collected when a text is first scrubbed: a client whose
// requests all succeed (most of a periodic probe's) never collects them,
// and a client is built for every probe.
type secrets struct {
	values func() []string // longest first
}

// newSecrets returns the secrets of cfg, collected on first use.
func newSecrets(cfg Config) secrets {
	username, password := cfg.Username, cfg.Password
	addresses := []string{cfg.Address, cfg.LockAddress, cfg.UnlockAddress}
	return secrets{values: sync.OnceValue(func() []string { return secretValues(username, password, addresses) })}
}

// secretValues collects the secrets of a client with username, password
// and addresses.
func secretValues(username, password string, addresses []string) []string {
	var base []string
	addPair := func(user, pass string) {
		if pass == "" {
			return
		}
		pair := user + ":" + pass
		base = append(base, pass, pair, base64.StdEncoding.EncodeToString([]byte(pair)))
	}
	if username != "" {
		addPair(username, password)
	} else if password != "" {
		base = append(base, password) // unused for auth, a secret all the same
	}
	for _, raw := range addresses {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if pass, ok := u.User.Password(); ok {
			addPair(u.User.Username(), pass)
		}
		for kv := range strings.SplitSeq(u.RawQuery, "&") {
			_, v, _ := strings.Cut(kv, "=")
			base = append(base, v)
			if unescaped, err := url.QueryUnescape(v); err == nil {
				base = append(base, unescaped)
			}
		}
	}
	var values []string
	for _, v := range base {
		values = append(values, variants(v)...)
	}
	values = slices.DeleteFunc(values, func(v string) bool { return v == "" })
	// Longest first, so that a secret containing another is replaced
	// whole; equal values side by side, so that Compact drops repeats.
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(values)
}

// variants returns v and the forms it takes escaped in URLs, Go quoted
// strings and JSON strings.
func variants(v string) []string {
	quoted := strconv.Quote(v)
	js, _ := json.Marshal(v) //nolint:errchkjson // cannot fail on a string
	return []string{v, url.QueryEscape(v), url.PathEscape(v), quoted[1 : len(quoted)-1], string(js[1 : len(js)-1])}
}

// scrub replaces every secret in text with [redacted]; a secret shorter
// than shortSecretLen only where no letter or digit touches it.
func (s secrets) scrub(text string) string {
	for _, v := range s.values() {
		if len(v) >= shortSecretLen {
			text = strings.ReplaceAll(text, v, redacted)
			continue
		}
		text = replaceStandalone(text, v)
	}
	return text
}

// replaceStandalone replaces the occurrences of v in text that no ASCII
// letter or digit touches.
func replaceStandalone(text, v string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, v)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		end := i + len(v)
		if (i == 0 || !isAlnum(text[i-1])) && (end == len(text) || !isAlnum(text[end])) {
			b.WriteString(text[:i])
			b.WriteString(redacted)
		} else {
			b.WriteString(text[:end])
		}
		text = text[end:]
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// scrubLockInfo removes the secrets from every text field of l.
func (s secrets) scrubLockInfo(l *LockInfo) { l.Rewrite(s.scrub) }

// scrubError returns err, or, when its text holds a secret, err with that
// text scrubbed (errors.Is and errors.As still see err's chain).
func (s secrets) scrubError(err error) error {
	return redact.Rewrite(err, s.scrub)
}

// cleanCause returns err with a text holding neither the bytes a server
// sent (the quoted segments of net/http's errors) nor a secret.
func (s secrets) cleanCause(err error) error {
	return redact.Rewrite(err, func(text string) string { return s.scrub(stripQuoted(text)) })
}

// cleanTransportError returns a transport error as the client reports it:
// a *url.Error names target (scheme://host/path of the address asked for,
// never the URL net/http last tried, which may be a redirect's Location,
// and never a query) and has a clean cause.
func (s secrets) cleanTransportError(err error, target string) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return &url.Error{Op: ue.Op, URL: target, Err: s.cleanCause(ue.Err)}
	}
	return s.cleanCause(err)
}
