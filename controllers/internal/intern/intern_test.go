package intern

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// same reports whether a and b share their bytes.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestTable checks which strings the table gives back as the copy it
// holds, and which it forgets.
func TestTable(t *testing.T) {
	cases := map[string]struct {
		limit, maxLen int
		// given are the strings given in turn, the last one checked.
		given []string
		// want is whether the last string given is the first copy.
		want bool
		// size is the number of strings held at the end (see Len).
		size int
	}{
		"a string given twice": {
			limit: 4, maxLen: 16, given: []string{"Ready", "Ready"}, want: true, size: 1,
		},
		"another string": {
			limit: 4, maxLen: 16, given: []string{"Ready", "Succeeded"}, want: false, size: 2,
		},
		"a string longer than maxLen": {
			limit: 4, maxLen: 4, given: []string{"Ready", "Ready"}, want: false, size: 0,
		},
		"a string of the previous generation": {
			limit: 2, maxLen: 16, given: []string{"Ready", "a", "b", "Ready"}, want: true, size: 4,
		},
		"a string unused for two generations": {
			limit: 2, maxLen: 16, given: []string{"Ready", "a", "b", "c", "d", "Ready"}, want: false, size: 4,
		},
		"a string used in every generation": {
			limit: 2, maxLen: 16, given: []string{"Ready", "a", "Ready", "b", "Ready", "c", "Ready", "d", "Ready"}, want: true, size: 4,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tab := New(tc.limit, tc.maxLen)
			var first string
			var got string
			for i, s := range tc.given {
				// Each string given is a copy of its own, as decoding makes.
				got = tab.String(strings.Clone(s))
				if i == 0 {
					first = got
				}
			}
			if diff := cmp.Diff(tc.given[len(tc.given)-1], got); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			if s := same(first, got); s != tc.want {
				t.Errorf("the first copy given back: %v, want %v", s, tc.want)
			}
			if n := tab.Len(); n != tc.size {
				t.Errorf("held %d strings, want %d", n, tc.size)
			}
		})
	}
}

// TestTableCopies checks that the copy the table keeps shares no memory
// with the string it was given: a string cut from a larger buffer does
// not keep it alive.
func TestTableCopies(t *testing.T) {
	buffer := strings.Repeat("x", 1024) + "Ready"
	given := buffer[1024:]
	got := New(4, 16).String(given)
	if same(got, given) {
		t.Error("the table kept the string it was given, and with it its buffer")
	}
}

// TestTableEmpty checks that the empty string is never recorded.
func TestTableEmpty(t *testing.T) {
	tab := New(4, 16)
	if got := tab.String(""); got != "" || tab.Len() != 0 {
		t.Errorf("String(\"\") = %q, holding %d strings; want \"\", none", got, tab.Len())
	}
}

// TestTableBound checks that the table holds at most two generations.
func TestTableBound(t *testing.T) {
	tab := New(8, 16)
	for i := range 1000 {
		tab.String(fmt.Sprint(i))
	}
	if n := tab.Len(); n > 16 {
		t.Errorf("held %d strings, want at most 16", n)
	}
}
