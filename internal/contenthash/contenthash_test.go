package contenthash

import (
	"crypto/sha256"
	"encoding/hex"
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
