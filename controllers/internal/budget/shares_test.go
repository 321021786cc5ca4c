package budget

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one operation on a budget and what it must give.
type step struct {
	op        string // take, give, charge, advance
	namespace string
	n         int64
	// wantErr is a substring of the error, "" for none.
	wantErr string
}

func TestShares(t *testing.T) {
	bytes := Config{Name: "read memory", Unit: Bytes, PerNamespace: 100, PerNamespaceFlag: "share-flag", Total: 150, TotalFlag: "total-flag"}
	rate := Config{Name: "key derivation CPU", Unit: Nanoseconds, PerNamespace: int64(10 * time.Second), PerNamespaceFlag: "kdf-share",
		Total: int64(15 * time.Second), TotalFlag: "kdf-total", Window: time.Minute}
	tests := []struct {
		name     string
		cfg      Config
		steps    []step
		wantUsed map[string]int64
	}{
		{
			name: "a namespace takes up to its share",
			cfg:  bytes,
			steps: []step{
				{op: "take", namespace: "a", n: 60},
				{op: "take", namespace: "a", n: 40},
				{op: "take", namespace: "a", n: 1, wantErr: "namespace a has used its read memory share: 100 bytes of 100 bytes (--share-flag), 1 bytes more were asked for"},
			},
			wantUsed: map[string]int64{"a": 100},
		},
		{
			name: "the total bounds every namespace together",
			cfg:  bytes,
			steps: []step{
				{op: "take", namespace: "a", n: 100},
				{op: "take", namespace: "b", n: 50},
				{op: "take", namespace: "c", n: 1, wantErr: "all namespaces together use 150 bytes of the 150 bytes total (--total-flag), 1 bytes more were asked for by namespace c"},
			},
			wantUsed: map[string]int64{"a": 100, "b": 50},
		},
		{
			name: "what is given back can be taken again, by anyone",
			cfg:  bytes,
			steps: []step{
				{op: "take", namespace: "a", n: 100},
				{op: "take", namespace: "b", n: 50},
				{op: "give", namespace: "a", n: 30},
				{op: "take", namespace: "c", n: 30},
				{op: "take", namespace: "c", n: 1, wantErr: "--total-flag"},
			},
			wantUsed: map[string]int64{"a": 70, "b": 50, "c": 30},
		},
		{
			name: "giving more than was taken leaves nothing, not a credit",
			cfg:  bytes,
			steps: []step{
				{op: "take", namespace: "a", n: 10},
				{op: "give", namespace: "a", n: 50},
				{op: "take", namespace: "b", n: 100},
				{op: "take", namespace: "a", n: 51, wantErr: "--total-flag"},
			},
			wantUsed: map[string]int64{"b": 100},
		},
		{
			name: "a charge is recorded even past the share, and refuses the next take",
			cfg:  rate,
			steps: []step{
				{op: "charge", namespace: "a", n: int64(12 * time.Second)},
				{op: "take", namespace: "a", n: 1, wantErr: "namespace a has used its key derivation CPU share: 12.0s of 10.0s (--kdf-share)"},
				{op: "take", namespace: "b", n: int64(4 * time.Second), wantErr: "all namespaces together use 12.0s of the 15.0s total (--kdf-total), 4.0s more"},
			},
			wantUsed: map[string]int64{"a": int64(12 * time.Second)},
		},
		{
			name: "a rate drains its share every window",
			cfg:  rate,
			steps: []step{
				{op: "charge", namespace: "a", n: int64(12 * time.Second)},
				{op: "advance", n: int64(30 * time.Second)}, // drains 5s of a's use, 7.5s of the sum
				{op: "take", namespace: "a", n: int64(3 * time.Second)},
				{op: "take", namespace: "b", n: int64(2 * time.Second)},
				{op: "advance", n: int64(time.Hour)},
				{op: "take", namespace: "a", n: int64(10 * time.Second)},
			},
			wantUsed: map[string]int64{"a": int64(10 * time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
			s := New(tt.cfg, clk)
			for i, st := range tt.steps {
				var err error
				switch st.op {
				case "take":
					err = s.TryTake(st.namespace, st.n)
				case "give":
					s.Give(st.namespace, st.n)
				case "charge":
					s.Charge(st.namespace, st.n)
				case "advance":
					clk.SetTime(clk.Now().Add(time.Duration(st.n)))
				}
				switch {
				case st.wantErr == "" && err != nil:
					t.Fatalf("step %d (%s %s %d): %v", i, st.op, st.namespace, st.n, err)
				case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
					t.Fatalf("step %d (%s %s %d): error %v, want one containing %q", i, st.op, st.namespace, st.n, err, st.wantErr)
				}
				var exceeded *ExceededError
				if err != nil && !errors.As(err, &exceeded) {
					t.Fatalf("step %d: error %T is no *ExceededError", i, err)
				}
			}
			if diff := cmp.Diff(tt.wantUsed, s.Usage()); diff != "" {
				t.Errorf("use (-want +got):\n%s", diff)
			}
		})
	}
}
