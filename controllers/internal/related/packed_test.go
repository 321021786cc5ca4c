package related

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestPackedUID checks that every UID is given back as it was, whether
// it is packed or not.
func TestPackedUID(t *testing.T) {
	cases := map[string]struct {
		uid    types.UID
		packed bool
	}{
		"a UUID":            {uid: "a391118b-bb33-4f72-9733-bc6a1efe9e07", packed: true},
		"an upper case one": {uid: "A391118B-BB33-4F72-9733-BC6A1EFE9E07"},
		"a URN":             {uid: "urn:uuid:a391118b-bb33-4f72-9733-bc6a1efe9e07"},
		"the nil UUID":      {uid: "00000000-0000-0000-0000-000000000000"},
		"another string":    {uid: "u-1"},
		"none":              {uid: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := packUID(tc.uid)
			if diff := cmp.Diff(tc.uid, p.unpack()); diff != "" {
				t.Errorf("unpacked (-want +got):\n%s", diff)
			}
			if packed := p.other == ""; packed != tc.packed && tc.uid != "" {
				t.Errorf("packed: %v, want %v", packed, tc.packed)
			}
		})
	}
}

// TestPackedHash checks that every content hash annotation is given back
// as it was, whether it is packed or not.
func TestPackedHash(t *testing.T) {
	digits := strings.Repeat("0123456789abcdef", 4)
	cases := map[string]struct {
		value  string
		packed bool
	}{
		"a content hash":       {value: "sha256:" + digits, packed: true},
		"upper case digits":    {value: "sha256:" + strings.ToUpper(digits)},
		"too short":            {value: "sha256:" + digits[1:]},
		"not hex":              {value: "sha256:" + strings.Repeat("g", 64)},
		"another algorithm":    {value: "sha512:" + digits},
		"zeros":                {value: "sha256:" + strings.Repeat("0", 64)},
		"a value of the tests": {value: "sha256:1"},
		"none":                 {value: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := packHash(tc.value)
			if diff := cmp.Diff(tc.value, p.unpack()); diff != "" {
				t.Errorf("unpacked (-want +got):\n%s", diff)
			}
			if packed := p.other == ""; packed != tc.packed && tc.value != "" {
				t.Errorf("packed: %v, want %v", packed, tc.packed)
			}
		})
	}
}
