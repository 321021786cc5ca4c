package cos

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	errtext "github.com/infrastate/backend-operator/internal/redact"
)

// redacted replaces a secret in an error message.
const redacted = "<redacted>"

// signatureParam matches the request-signing parameters COS accepts in a
// query string or an Authorization header (q-signature, q-ak,
// x-cos-security-token), with their value, plain or URL-encoded: a request
// URL quoted by an error (the SDK's, net/http's) or an answer echoing the
// Authorization header would otherwise carry a signature or a token.
var signatureParam = regexp.MustCompile(`(?i)(q-signature|q-ak|x-cos-security-token)(=|%3D)[^&\s"'<>;,)]*`)

// signatureDigits matches a run of hex digits that may hold a q-signature
// value on its own: COS signs with HMAC-SHA1 only (q-sign-algorithm=sha1),
// so a signature is 40 hex digits. An answer may echo it without its
// name. Of what this package reports, MD5 checksums (32 digits) are
// shorter, and SHA-256 digests (64 digits, in the keys of a state
// history's snapshots) are kept whole: see scrubDigits.
var signatureDigits = regexp.MustCompile(`(?i)[0-9a-f]{40,}`)

// sha256Digits is the length of a hex SHA-256, which scrubDigits keeps.
const sha256Digits = 64

// scrubDigits redacts a run of hex digits that may hold a signature: any
// run of 40 or more but a SHA-256's 64.
func scrubDigits(run string) string {
	if len(run) == sha256Digits {
		return run
	}
	return redacted
}

// redactor removes a Client's credentials from error messages. Every error
// a Client returns goes through it, whatever produced the text: the SDK,
// net/http, or an answer from the server.
type redactor struct {
	// secrets are the secret key and the security token, each also in
	// its URL-escaped forms when they differ. Empty values are left out.
	secrets []string
}

func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, s := range secrets {
		if s == "" {
			continue
		}
		r.secrets = append(r.secrets, s)
		for _, escaped := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if escaped != s {
				r.secrets = append(r.secrets, escaped)
			}
		}
	}
	return r
}

// scrub returns s without the secrets, without the signing parameters
// (name and value: the name alone would read as a leak to a scanner) and
// without anything shaped like a signature.
func (r redactor) scrub(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	s = signatureParam.ReplaceAllLiteralString(s, redacted)
	return signatureDigits.ReplaceAllStringFunc(s, scrubDigits)
}

// error returns err unchanged when its message needs no scrubbing, and
// otherwise an error with the scrubbed message that still matches
// everything err matches (errors.Is, errors.As).
func (r redactor) error(err error) error {
	return errtext.Rewrite(err, r.scrub)
}

// withoutURL returns err with the URL of a *url.Error left out of its
// message: net/http quotes the request URL, which after a redirect is the
// Location the server chose, and the SDK's request URLs can carry signing
// parameters. The *url.Error stays reachable with errors.As.
func withoutURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	msg := strings.Replace(err.Error(), ue.Error(), ue.Op+" request: "+ue.Err.Error(), 1)
	return errtext.Error(err, msg)
}
