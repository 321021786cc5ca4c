package conditions

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJoinStalls(t *testing.T) {
	transient := errors.New("reading Secret team-a/pw: the server is currently unable to handle the request")
	cases := map[string]struct {
		errs []error
		want error
	}{
		"nothing failed": {errs: []error{nil, nil}},
		"one stall":      {errs: []error{nil, Stall("SecretNotFound", "A")}, want: &StallError{Reason: "SecretNotFound", Message: "A"}},
		"several stalls, in order": {errs: []error{Stall("SecretNotFound", "A"), nil, Stall("ConfigMapKeyMissing", "B"), Stall("InvalidPassphrase", "C.")},
			want: &StallError{Reason: "SecretNotFound", Message: "A. B. C"}},
		"a wrapped stall": {errs: []error{fmt.Errorf("resolving: %w", Stall("RegionMissing", "A")), Stall("SecretNotFound", "B")},
			want: &StallError{Reason: "RegionMissing", Message: "A. B"}},
		"a transient error wins: its retry reports every problem": {errs: []error{Stall("SecretNotFound", "A"), transient, Stall("SecretKeyMissing", "B")},
			want: transient},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := JoinStalls(tc.errs...)
			if want, ok := tc.want.(*StallError); ok { //nolint:errorlint // the table's own values, never wrapped
				se, _ := AsStall(got)
				if diff := cmp.Diff(want, se); diff != "" {
					t.Errorf("JoinStalls() mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if got != tc.want { //nolint:errorlint // the very error given must come back, not one that wraps it
				t.Errorf("JoinStalls() = %v, want %v", got, tc.want)
			}
		})
	}
}
