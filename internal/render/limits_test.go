package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// secretMarker is planted in override values and keys: no error may quote
// it.
const secretMarker = "hunter2"

// jsonString returns a JSON string holding n bytes: secretMarker, then
// "x" up to n (n must be at least len(secretMarker)).
func jsonString(n int) string {
	return `"` + secretMarker + strings.Repeat("x", n-len(secretMarker)) + `"`
}

// jsonList returns a JSON list of n copies of member.
func jsonList(n int, member string) string {
	return "[" + strings.Repeat(member+",", n)[:max(0, n*(len(member)+1)-1)] + "]"
}

// jsonObject returns a JSON object of n members "<secretMarker>NNN": value,
// whose first key is padded with "k" to firstKeyBytes bytes (when longer
// than the others).
func jsonObject(n, firstKeyBytes int, value string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		key := fmt.Sprintf("%s%03d", secretMarker, i)
		if i == 0 && firstKeyBytes > len(key) {
			key += strings.Repeat("k", firstKeyBytes-len(key))
		}
		b.WriteString(`"` + key + `":` + value)
	}
	b.WriteString("}")
	return b.String()
}

// nestedLists returns depth nested JSON lists: [[[...]]].
func nestedLists(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// numberedOverrides returns n overrides x00, x01, ... each with value.
func numberedOverrides(n int, value string) []backendsv1alpha1.Override {
	out := make([]backendsv1alpha1.Override, n)
	for i := range out {
		out[i] = overrideJSON(fmt.Sprintf("x%02d", i), value)
	}
	return out
}

// TestOverrideLimits checks the shape and size limits of override values
// at and just beyond each limit. A refused value is reported as an
// ErrInvalidOverride naming the path, never quoting the value.
func TestOverrideLimits(t *testing.T) {
	path128 := deepPath("b", "xy")
	if len(path128) != 128 {
		t.Fatalf("the path %q has %d bytes, want 128", path128, len(path128))
	}
	cases := map[string]struct {
		overrides []backendsv1alpha1.Override
		wantMsg   string // empty: the spec renders
	}{
		// Accepted, at the limits.
		"scalars": {overrides: []backendsv1alpha1.Override{
			overrideJSON("s", `"s"`), overrideJSON("n", `-1.5`), overrideJSON("b", `true`), overrideJSON("z", `null`),
		}},
		"list of scalars":                 {overrides: []backendsv1alpha1.Override{overrideJSON("x", `["s", -1.5, true, null]`)}},
		"object of scalars":               {overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"s": "s", "n": 1, "b": false, "z": null}`)}},
		"empty list and object":           {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[]`), overrideJSON("y", `{}`)}},
		"string of 4096 bytes":            {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonString(4096))}},
		"string of 4096 bytes as escapes": {overrides: []backendsv1alpha1.Override{overrideJSON("x", `"`+strings.Repeat(`\u00fc`, 2048)+`"`)}},
		"list member of 4096 bytes":       {overrides: []backendsv1alpha1.Override{overrideJSON("x", "["+jsonString(4096)+"]")}},
		"list of 64 members":              {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonList(64, "0"))}},
		"object of 64 members":            {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonObject(64, 0, "0"))}},
		"key of 128 bytes":                {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonObject(1, 128, "0"))}},
		"number of 32 bytes":              {overrides: []backendsv1alpha1.Override{overrideJSON("x", "12345678901234567890123456789012")}},
		"largest magnitude":               {overrides: []backendsv1alpha1.Override{overrideJSON("x", "-9.99999999999999999999999999e31")}},
		"smallest magnitude":              {overrides: []backendsv1alpha1.Override{overrideJSON("x", "1e-32"), overrideJSON("y", "-0.00001e-27")}},
		"zero with any exponent":          {overrides: []backendsv1alpha1.Override{overrideJSON("x", "0e999999999"), overrideJSON("y", "-0.000e-99999999")}},
		"exponent with leading zeros":     {overrides: []backendsv1alpha1.Override{overrideJSON("x", "1e+0000000000000000000000000031")}},
		"fraction and exponent cancel":    {overrides: []backendsv1alpha1.Override{overrideJSON("x", "0.0000000000000000000001e53")}},
		"values of 32 KiB in total":       {overrides: append(numberedOverrides(8, jsonString(4094)), overrideJSON("last", jsonString(16)))},
		"32 overrides":                    {overrides: numberedOverrides(32, "1")},
		"path of 128 bytes":               {overrides: []backendsv1alpha1.Override{overrideJSON(path128, "1")}},

		// Refused.
		"list in a list":          {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[1, [2]]`)}, wantMsg: `path "x": a list or object value may hold only strings, numbers, bools and null`},
		"empty list in a list":    {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[[]]`)}, wantMsg: "may hold only strings"},
		"object in a list":        {overrides: []backendsv1alpha1.Override{overrideJSON("x", `[{"k": "`+secretMarker+`"}]`)}, wantMsg: "may hold only strings"},
		"list in an object":       {overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"`+secretMarker+`": [1]}`)}, wantMsg: "may hold only strings"},
		"object in an object":     {overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"a": {}}`)}, wantMsg: "may hold only strings"},
		"string of 4097 bytes":    {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonString(4097))}, wantMsg: `path "x": a string is longer than 4096 bytes`},
		"4097 bytes as escapes":   {overrides: []backendsv1alpha1.Override{overrideJSON("x", `"`+strings.Repeat(`\u00fc`, 2048)+`x"`)}, wantMsg: "a string is longer than 4096 bytes"},
		"list member too long":    {overrides: []backendsv1alpha1.Override{overrideJSON("x", "[1, "+jsonString(4097)+"]")}, wantMsg: "a string is longer than 4096 bytes"},
		"object member too long":  {overrides: []backendsv1alpha1.Override{overrideJSON("x", `{"a": `+jsonString(4097)+"}")}, wantMsg: "a string is longer than 4096 bytes"},
		"list of 65 members":      {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonList(65, "0"))}, wantMsg: `path "x": a list or object has more than 64 members`},
		"object of 65 members":    {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonObject(65, 0, "0"))}, wantMsg: "more than 64 members"},
		"key of 129 bytes":        {overrides: []backendsv1alpha1.Override{overrideJSON("x", jsonObject(1, 129, "0"))}, wantMsg: `path "x": an object key is longer than 128 bytes`},
		"number of 33 bytes":      {overrides: []backendsv1alpha1.Override{overrideJSON("x", "123456789012345678901234567890123")}, wantMsg: `path "x": a number literal is longer than 32 bytes`},
		"number of 1e32":          {overrides: []backendsv1alpha1.Override{overrideJSON("x", "1e32")}, wantMsg: `path "x": a number must be 0 or have a magnitude between 1e-32 and 1e32`},
		"number of -1e32":         {overrides: []backendsv1alpha1.Override{overrideJSON("x", "-0.1e33")}, wantMsg: "magnitude between"},
		"number below 1e-32":      {overrides: []backendsv1alpha1.Override{overrideJSON("x", "9.9e-33")}, wantMsg: "magnitude between"},
		"huge exponent in a list": {overrides: []backendsv1alpha1.Override{overrideJSON("x", "[1, 1e999999999]")}, wantMsg: "magnitude between"},
		"tiny exponent":           {overrides: []backendsv1alpha1.Override{overrideJSON("x", "1e-99999999")}, wantMsg: "magnitude between"},
		"exponent of 30 digits":   {overrides: []backendsv1alpha1.Override{overrideJSON("x", "1e999999999999999999999999999999")}, wantMsg: "magnitude between"},
		"values over 32 KiB": {
			overrides: append(numberedOverrides(8, jsonString(4094)), overrideJSON("last", jsonString(17))),
			wantMsg:   `path "last": the override values total more than 32768 bytes`,
		},
		"numbers count 8 bytes each": {
			overrides: append(numberedOverrides(8, jsonString(4094)), overrideJSON("last", "[1, 2, true]")),
			wantMsg:   `path "last": the override values total more than 32768 bytes`,
		},
		"path of 4 segments": {overrides: []backendsv1alpha1.Override{overrideJSON("a.b.c.d", "1")}, wantMsg: `path "a.b.c.d" has more than 3 segments`},
		"33 overrides":       {overrides: numberedOverrides(33, "1"), wantMsg: "33 overrides, more than 32"},
		"path of 129 bytes":  {overrides: []backendsv1alpha1.Override{overrideJSON(path128+"z", "1")}, wantMsg: "the path of override 0 is longer than 128 bytes"},
		"a later override too deep": {
			overrides: []backendsv1alpha1.Override{overrideJSON("a", `1`), overrideJSON("b", `[[1]]`)},
			wantMsg:   `path "b": a list or object value may hold only`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := HTTPFiles(backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: tc.overrides})
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("HTTPFiles: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("rendering succeeded, want an error containing %q", tc.wantMsg)
			}
			if !errors.Is(err, ErrInvalidOverride) {
				t.Errorf("error %q is not ErrInvalidOverride", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), secretMarker) {
				t.Errorf("error %q quotes the value", err)
			}
		})
	}
}

// TestHostileOverridesAreRefusedCheaply renders the hostile values that
// used to take the manager down, and checks that they are refused with a
// clear error before anything proportional to their rendering is
// allocated. Refusing costs at most a few buffers whatever the value's
// size: the limits are checked by a scan that stops at the first breach.
func TestHostileOverridesAreRefusedCheaply(t *testing.T) {
	// maxRefusalAlloc is what refusing a value may allocate: the scanner's
	// buffer and the error, never a copy or a rendering of the value.
	const maxRefusalAlloc = 64 << 10

	flat := jsonList(350_000, "0") // ~700 KB
	flat = flat[:len(flat)-1] + "," + jsonString(300_000) + "]"
	cases := map[string]struct {
		value   string
		wantMsg string
	}{
		// 18 KB that rendered to 162 MB and peaked at 1.04 GB.
		"9000 nested arrays": {value: nestedLists(9000), wantMsg: "a list or object value may hold only strings, numbers, bools and null"},
		// 35 s of CPU per render.
		"flat array of 1 MB": {value: flat, wantMsg: "a list or object has more than 64 members"},
		// Printed in plain decimal, 1e99999999 has 100 million digits;
		// 1e999999999 overflows to infinity, which neither file can
		// write; 1e-99999999 takes longer still.
		"exponent of 8 digits": {value: "1e99999999", wantMsg: "a number must be 0 or have a magnitude between 1e-32 and 1e32"},
		"exponent of 9 digits": {value: "1e999999999", wantMsg: "a number must be 0 or have a magnitude between 1e-32 and 1e32"},
		"negative exponent":    {value: "-1e-99999999", wantMsg: "a number must be 0 or have a magnitude between 1e-32 and 1e32"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: []backendsv1alpha1.Override{overrideJSON("future", tc.value)}}
			var err error
			alloc := testtools.AllocatedBy(func() { _, err = HTTPFiles(spec) })
			if !errors.Is(err, ErrInvalidOverride) {
				t.Fatalf("error %v is not ErrInvalidOverride", err)
			}
			if want := `path "future": ` + tc.wantMsg; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
			if strings.Contains(err.Error(), secretMarker) {
				t.Errorf("error %q quotes the value", err)
			}
			if alloc > maxRefusalAlloc {
				t.Errorf("refusing a %d-byte value allocated %d bytes, want at most %d", len(tc.value), alloc, maxRefusalAlloc)
			}
		})
	}
}

// TestOverrideNumbersRenderBounded checks that the numbers at the
// magnitude limits are written in full, in plain decimal, in a bounded
// number of characters in every file, and read back unchanged.
func TestOverrideNumbersRenderBounded(t *testing.T) {
	// maxNumberText is the longest plain decimal a number within the
	// limits can take: a sign, 32 digits before the point, the point and
	// 31 digits after it, or "-0.", 31 zeros and 31 significant digits.
	const maxNumberText = 66
	cases := map[string]struct {
		literal string
		want    string
	}{
		"largest":              {literal: "-9.99999999999999999999999999e31", want: "-99999999999999999999999999900000"},
		"smallest":             {literal: "1e-32", want: "0.00000000000000000000000000000001"},
		"smallest with digits": {literal: "-1.23456789012345678901234e-32", want: "-0.0000000000000000000000000000000123456789012345678901234"},
		"32 digits":            {literal: "12345678901234567890123456789012", want: "12345678901234567890123456789012"},
		"zero":                 {literal: "0e999999999", want: "0"},
		"exponent cancels":     {literal: "0.0000000000000000000001e53", want: "10000000000000000000000000000000"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if len(tc.want) > maxNumberText {
				t.Fatalf("the expected text %q is longer than %d", tc.want, maxNumberText)
			}
			spec := backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: []backendsv1alpha1.Override{overrideJSON("n", tc.literal)}}
			// Every file reads back as the number that went in.
			f := checkHTTPRoundTrip(t, spec)
			for name, content := range map[string]string{
				BackendTFKey:        string(f.BackendTF),
				BackendTFBackendKey: string(f.BackendTFBackend),
				BackendTFJSONKey:    string(f.BackendTFJSON),
			} {
				if !strings.Contains(content, " "+tc.want+"\n") {
					t.Errorf("%s does not write %s as %s:\n%s", name, tc.literal, tc.want, content)
				}
			}
		})
	}
}
