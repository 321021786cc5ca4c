package contenthash

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestHashes(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	cases := map[string]struct{ got, want string }{
		"parts are length-prefixed": {got: Sum([]byte("ab"), []byte("c")), want: sum("2:ab1:c")},
		"no parts":                  {got: Sum(), want: sum("")},
		"ConfigMap keys are sorted and prefixed": {
			got:  ConfigMap(map[string]string{"b": "2", "a": "11"}, nil),
			want: "sha256:" + sum("6:data/a2:116:data/b1:2"),
		},
		"ConfigMap binaryData after data": {
			got:  ConfigMap(map[string]string{"a": "1"}, map[string][]byte{"z": {0}}),
			want: "sha256:" + sum("6:data/a1:112:binaryData/z1:\x00"),
		},
		"empty ConfigMap": {got: ConfigMap(nil, nil), want: "sha256:" + sum("")},
		"Secret keys are sorted": {
			got:  Secret(map[string][]byte{"B": []byte("x"), "A": nil}),
			want: "sha256:" + sum("1:A0:1:B1:x"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("hash = %s, want %s", tc.got, tc.want)
			}
		})
	}
}

// TestParse checks that a Sum and a content hash are read back as they
// were written, and that any text they would not give back is refused.
func TestParse(t *testing.T) {
	sum := Sum([]byte("a"))
	upper := strings.ToUpper(sum)
	cases := map[string]struct {
		value     string
		parse     func(string) (Digest, bool)
		format    func(Digest) string
		wantValid bool
	}{
		"a Sum":                           {value: sum, parse: ParseSum, format: Digest.Sum, wantValid: true},
		"a Sum in upper case":             {value: upper, parse: ParseSum},
		"a Sum too short":                 {value: sum[1:], parse: ParseSum},
		"not hex":                         {value: strings.Repeat("g", 64), parse: ParseSum},
		"a content hash":                  {value: Secret(nil), parse: ParseHash, format: Digest.Hash, wantValid: true},
		"a content hash without a prefix": {value: sum, parse: ParseHash},
		"another algorithm":               {value: "sha512:" + sum, parse: ParseHash},
		"a content hash in upper case":    {value: Prefix + upper, parse: ParseHash},
		"none":                            {value: "", parse: ParseHash},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, ok := tc.parse(tc.value)
			if ok != tc.wantValid {
				t.Fatalf("parsing %q: valid = %t, want %t", tc.value, ok, tc.wantValid)
			}
			if ok {
				if got := tc.format(d); got != tc.value {
					t.Errorf("written back as %q, want %q", got, tc.value)
				}
			}
		})
	}
}
