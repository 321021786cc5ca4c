package costest

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/tencentyun/cos-go-sdk-v5"
)

// signedAt is the fixed signing time of these tests.
var signedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// signedRequest builds a request the way the server receives it and signs
// it with the SDK's own signer at signedAt, valid for an hour.
func signedRequest(t *testing.T, method, target string, header http.Header, id, key, token string) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, target, http.NoBody)
	maps.Copy(r.Header, header)
	sdk.AddAuthorizationHeader(id, key, token, r, &sdk.AuthTime{
		SignStartTime: signedAt, SignEndTime: signedAt.Add(time.Hour),
		KeyStartTime: signedAt, KeyEndTime: signedAt.Add(time.Hour),
	})
	return r
}

func newVerifier() *Server {
	s := &Server{creds: map[string]credential{
		"AKIDperm": {secretKey: "perm-secret"},
		"AKIDtemp": {secretKey: "temp-secret", token: "the-token"},
	}}
	return s
}

// TestAuthenticateSDKSignatures checks the verifier against signatures the
// SDK computes, over paths, parameters and headers that need encoding,
// and that changing any signed part of the request breaks it.
func TestAuthenticateSDKSignatures(t *testing.T) {
	const target = "http://b-125.cos.ap-guangzhou.myqcloud.com/env%2Fa%20b%2B%C3%A9/terraform.tfstate?prefix=a%2Fb%21%27%28%29%2A&max-keys=1&acl"
	header := http.Header{
		"X-Cos-Meta-Md5": {"0123456789abcdef0123456789abcdef"},
		"Content-Type":   {"application/json; charset=utf-8"},
		"X-Cos-Acl":      {"private"},
		"User-Agent":     {"unsigned"},
	}
	cases := map[string]struct {
		id, key, token string
		tamper         func(r *http.Request)
		now            time.Time
		want           *apiError
	}{
		"valid":                   {id: "AKIDperm", key: "perm-secret"},
		"valid at the end":        {id: "AKIDperm", key: "perm-secret", now: signedAt.Add(time.Hour)},
		"temporary key and token": {id: "AKIDtemp", key: "temp-secret", token: "the-token"},
		"unsigned header changed": {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.Header.Set("User-Agent", "x") }},
		"unsigned header added":   {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.Header.Set("Accept", "x") }},

		"no header":       {tamper: func(r *http.Request) { r.Header.Del("Authorization") }, want: errAccessDenied},
		"unknown key":     {id: "AKIDother", key: "perm-secret", want: errInvalidAK},
		"wrong secret":    {id: "AKIDperm", key: "not-the-secret", want: errBadSignature},
		"expired":         {id: "AKIDperm", key: "perm-secret", now: signedAt.Add(time.Hour + time.Second), want: errExpired},
		"from the future": {id: "AKIDperm", key: "perm-secret", now: signedAt.Add(-time.Hour), want: errSkewed},
		"token missing":   {id: "AKIDtemp", key: "temp-secret", want: errBadToken},
		"token wrong":     {id: "AKIDtemp", key: "temp-secret", token: "other-token", want: errBadToken},
		"signature flipped": {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) {
			h := r.Header.Get("Authorization")
			last := h[len(h)-1]
			r.Header.Set("Authorization", h[:len(h)-1]+map[bool]string{true: "1", false: "0"}[last == '0'])
		}, want: errBadSignature},
		"signature dropped": {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) {
			h, _, _ := strings.Cut(r.Header.Get("Authorization"), "&q-signature=")
			r.Header.Set("Authorization", h)
		}, want: errAccessDenied},
		"algorithm changed": {id: "AKIDperm", key: "perm-secret", tamper: editAuth("q-sign-algorithm=sha1", "q-sign-algorithm=sha256"), want: errAccessDenied},
		"key time widened":  {id: "AKIDperm", key: "perm-secret", tamper: editAuth(keyTime(time.Hour), keyTime(24*time.Hour)), want: errBadSignature},
		"header unlisted":   {id: "AKIDperm", key: "perm-secret", tamper: editAuth("content-type;", ""), want: errBadSignature},
		"method changed":    {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.Method = http.MethodPut }, want: errBadSignature},
		"path changed":      {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.URL.Path = "/env/other.tfstate" }, want: errBadSignature},
		"host changed":      {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.Host = "c-125.cos.ap-guangzhou.myqcloud.com" }, want: errBadSignature},
		"param changed":     {id: "AKIDperm", key: "perm-secret", tamper: setQuery("prefix", "a/c"), want: errBadSignature},
		"param removed":     {id: "AKIDperm", key: "perm-secret", tamper: setQuery("max-keys", ""), want: errBadSignature},
		"signed header changed": {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) {
			r.Header.Set("X-Cos-Meta-Md5", "ffffffffffffffffffffffffffffffff")
		}, want: errBadSignature},
		"signed header removed": {id: "AKIDperm", key: "perm-secret", tamper: func(r *http.Request) { r.Header.Del("X-Cos-Acl") }, want: errBadSignature},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := signedRequest(t, http.MethodGet, target, header.Clone(), tc.id, tc.key, tc.token)
			if tc.tamper != nil {
				tc.tamper(r)
			}
			now := tc.now
			if now.IsZero() {
				now = signedAt.Add(time.Minute)
			}
			ak, got := newVerifier().authenticate(r, now)
			if got != tc.want {
				t.Fatalf("authenticate = %v, want %v (Authorization %q)", got, tc.want, r.Header.Get("Authorization"))
			}
			if tc.want == nil && ak != tc.id {
				t.Errorf("access key = %q, want %q", ak, tc.id)
			}
		})
	}
}

// keyTime is the q-key-time field of a signature made at signedAt valid
// for d.
func keyTime(d time.Duration) string {
	return fmt.Sprintf("q-key-time=%d;%d", signedAt.Unix(), signedAt.Add(d).Unix())
}

func editAuth(old, repl string) func(*http.Request) {
	return func(r *http.Request) {
		r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), old, repl, 1))
	}
}

func setQuery(name, value string) func(*http.Request) {
	return func(r *http.Request) {
		q := r.URL.Query()
		if value == "" {
			q.Del(name)
		} else {
			q.Set(name, value)
		}
		r.URL.RawQuery = q.Encode()
	}
}

func TestEscape(t *testing.T) {
	cases := map[string]string{
		"":                   "",
		"AZaz09-_.~":         "AZaz09-_.~",
		"a b/c":              "a%20b%2Fc",
		"!'()*":              "%21%27%28%29%2A",
		"é":                  "%C3%A9",
		"x-cos-meta-md5=&;+": "x-cos-meta-md5%3D%26%3B%2B",
	}
	for in, want := range cases {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}
