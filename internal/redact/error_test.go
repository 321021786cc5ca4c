package redact

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestError(t *testing.T) {
	sentinel := errors.New("sentinel")
	timeout := &net.OpError{Op: "dial", Err: context.DeadlineExceeded}
	cases := map[string]struct {
		err         error
		wantIs      error
		wantNet     bool
		wantTimeout bool
	}{
		"a plain error is no network error": {err: errors.Join(sentinel, errors.New("500")), wantIs: sentinel},
		"a network error stays one":         {err: &url.Error{Op: "Get", URL: "https://h/p?token=x", Err: sentinel}, wantIs: sentinel, wantNet: true},
		"a timeout stays one":               {err: timeout, wantIs: context.DeadlineExceeded, wantNet: true, wantTimeout: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Error(tc.err, "clean text")
			if got.Error() != "clean text" {
				t.Errorf("Error() = %q", got.Error())
			}
			if !errors.Is(got, tc.wantIs) {
				t.Errorf("errors.Is(%v) = false", tc.wantIs)
			}
			var ne net.Error
			if isNet := errors.As(got, &ne); isNet != tc.wantNet {
				t.Fatalf("errors.As(net.Error) = %t, want %t", isNet, tc.wantNet)
			}
			if _, direct := got.(net.Error); direct != tc.wantNet { //nolint:errorlint // the rewritten error itself, not its chain, must be a net.Error
				t.Errorf("the rewritten error is a net.Error: %t, want %t", direct, tc.wantNet)
			}
			if tc.wantNet && ne.Timeout() != tc.wantTimeout {
				t.Errorf("Timeout() = %t, want %t", ne.Timeout(), tc.wantTimeout)
			}
		})
	}
}

func TestJSONError(t *testing.T) {
	var target struct {
		N int
		T time.Time
	}
	cases := map[string]struct {
		input   string
		wantMsg string
	}{
		"syntax":     {input: `{"N": secret}`, wantMsg: "syntax error at byte 7"},
		"wrong type": {input: `{"N": "secret"}`, wantMsg: "a value of the wrong type at byte 14"},
		"truncated":  {input: `{"N": 1`, wantMsg: "syntax error at byte 7"},
		"a bad time": {input: `{"T": "secret"}`, wantMsg: "a field has an invalid value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			decodeErr := json.Unmarshal([]byte(tc.input), &target)
			if decodeErr == nil {
				t.Fatalf("json.Unmarshal(%q) succeeded", tc.input)
			}
			err := JSONError(decodeErr)
			if err.Error() != tc.wantMsg {
				t.Errorf("JSONError() = %q, want %q", err, tc.wantMsg)
			}
			if !errors.Is(err, decodeErr) {
				t.Errorf("JSONError() does not wrap the decoder's error")
			}
		})
	}
	if JSONError(nil) != nil {
		t.Errorf("JSONError(nil) != nil")
	}
}

func TestRewrite(t *testing.T) {
	base := errors.New("token=abc")
	clean := func(s string) string { return strings.ReplaceAll(s, "abc", "***") }
	if got := Rewrite(nil, clean); got != nil {
		t.Errorf("Rewrite(nil) = %v", got)
	}
	kept := errors.New("kept")
	if got := Rewrite(kept, clean); got != kept { //nolint:errorlint // the very same value must come back, not a wrapper
		t.Errorf("Rewrite() of a clean error = %v, want the error itself", got)
	}
	got := Rewrite(base, clean)
	if got.Error() != "token=***" || !errors.Is(got, base) {
		t.Errorf("Rewrite() = %q (is base: %t), want token=*** wrapping base", got, errors.Is(got, base))
	}
}
