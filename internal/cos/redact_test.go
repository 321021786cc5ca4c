package cos

import (
	"errors"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactorScrub(t *testing.T) {
	const key, token = "k3y/with+special=chars", "t0ken value/+="
	sig := "0123456789abcdef0123456789abcdef01234567"
	cases := map[string]struct {
		secrets []string
		in      string
		want    string
	}{
		"nothing to scrub":          {secrets: []string{key, token}, in: "COS answered 404 Not Found", want: "COS answered 404 Not Found"},
		"no credentials":            {in: "plain message", want: "plain message"},
		"empty credentials ignored": {secrets: []string{"", ""}, in: "abc", want: "abc"},
		"secret key":                {secrets: []string{key, token}, in: "key " + key + ".", want: "key <redacted>."},
		"query-escaped token":       {secrets: []string{key, token}, in: "t=" + url.QueryEscape(token), want: "t=<redacted>"},
		"path-escaped token":        {secrets: []string{key, token}, in: "/" + url.PathEscape(token) + "/x", want: "/<redacted>/x"},
		"signing parameters": {
			in:   "GET /?q-sign-algorithm=sha1&q-ak=AKID&q-signature=abc&X-Cos-Security-Token=tok&max-keys=1",
			want: "GET /?q-sign-algorithm=sha1&<redacted>&<redacted>&<redacted>&max-keys=1",
		},
		"encoded signing parameter": {in: "sign=q-signature%3Dabc%26x=1 next", want: "sign=<redacted> next"}, // the rest of the encoded value goes too
		"bare signature":            {in: "signature " + sig + " echoed", want: "signature <redacted> echoed"},
		"upper-case signature":      {in: "<x" + "0123456789ABCDEF0123456789ABCDEF01234567>", want: "<x<redacted>>"},
		"an MD5 is kept":            {in: "body MD5 d41d8cd98f00b204e9800998ecf8427e", want: "body MD5 d41d8cd98f00b204e9800998ecf8427e"},
		"a snapshot key's SHA-256 is kept": {
			in:   `put object "h/l/00000000000000000003-` + sig + "abcdef0123456789abcdef01" + `.tfstate"`,
			want: `put object "h/l/00000000000000000003-` + sig + "abcdef0123456789abcdef01" + `.tfstate"`,
		},
		"a signature glued to more digits": {in: "x" + sig + "ab y", want: "x<redacted> y"},
		"two signatures glued":             {in: sig + sig, want: "<redacted>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, newRedactor(tc.secrets...).scrub(tc.in)); diff != "" {
				t.Errorf("scrub(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestRedactorErrorKeepsTheChain(t *testing.T) {
	sentinel := errors.New("sentinel")
	r := newRedactor("s3cret")
	err := r.error(errors.Join(sentinel, errors.New("the key is s3cret")))
	if got, want := err.Error(), "sentinel\nthe key is <redacted>"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, sentinel) {
		t.Error("the redacted error no longer matches its sentinel")
	}
	if clean := errors.New("clean"); r.error(clean) != clean { //nolint:errorlint // the very same value must come back, not a wrapper
		t.Error("an error with nothing to scrub was rewrapped")
	}
}
