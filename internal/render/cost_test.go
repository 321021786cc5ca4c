package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// The cost tests render specs at the override limits, shaped to amplify as
// much as they can (long escaped strings, many members, keys padded to
// align, long numbers, values deep inside nested blocks), and check that
// the files and the bytes allocated stay within a constant factor of the
// spec's size. They assert sizes, never durations.

// Bounds of the cost of rendering, per byte of the spec as JSON. They are
// constants: within the limits, no shape of spec costs more per byte, and
// the worst shapes (in maximalSpecs) are measured against them.
const (
	// maxOutputPerInputByte bounds the bytes of the three files per byte
	// of spec. The worst are 128-byte paths of MaxOverridePathSegments
	// names, each name a block written on two lines in each of the three
	// files: about 18 bytes of files per byte of spec. (With no bound on
	// the segments, a 128-byte path opened 62 nested blocks: about 170.)
	maxOutputPerInputByte = 32
	// maxAllocPerInputByte bounds the bytes allocated while rendering per
	// byte of spec. The worst is an object of one-letter keys: each member
	// (6 bytes of spec, `"a":0,`) is a line of backend.tf and of
	// backend.tfbackend, and hclwrite's alignment of the "=" allocates a
	// 4 KiB grapheme scanner for every token it measures, about 40 KiB per
	// member, or 5,600 bytes per byte of spec. (Without the limits, 18 KB
	// of nested lists rendered to 162 MB of files, and the cost grew with
	// the square of the nesting depth.)
	maxAllocPerInputByte = 8192
	// fixedOutput and fixedAlloc are the cost of rendering any spec, even
	// an empty one: the block structure, the encoders' buffers.
	fixedOutput = 1 << 10
	fixedAlloc  = 64 << 10
)

// deepPath returns an override path of 128 bytes that nests as deep as a
// path can, MaxOverridePathSegments names: <top>.aaa...a.<leaf>.
func deepPath(top, leaf string) string {
	return top + "." + strings.Repeat("a", maxOverridePathBytes-len(top)-len(leaf)-2) + "." + leaf
}

// jsonShortObject returns a JSON object of n members with the shortest
// distinct keys ("a", "b", ..., "aa", ...) and the value 0: the most lines
// per byte.
func jsonShortObject(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		key := string(rune('a' + i%26))
		if i >= 26 {
			key = string(rune('a'+i/26-1)) + key
		}
		b.WriteString(`"` + key + `":0`)
	}
	b.WriteString("}")
	return b.String()
}

// fillOverrides returns overrides at path(0), path(1), ... each holding
// value, as many as the limits on their number and total size allow.
func fillOverrides(path func(i int) string, value string) []backendsv1alpha1.Override {
	size, err := checkOverrideValue([]byte(value))
	if err != nil {
		panic(fmt.Sprintf("a maximal value is not within the limits: %v", err))
	}
	var out []backendsv1alpha1.Override
	for total := 0; len(out) < maxOverrides && total+size <= MaxOverrideValuesBytes; total += size {
		out = append(out, overrideJSON(path(len(out)), value))
	}
	return out
}

// escapingValue is a string of 4094 bytes (4096 as JSON, within the
// limit) of which every pair of bytes is escaped in backend.tf: "${"
// becomes "$${".
var escapingValue = `"` + strings.Repeat("${", 2047) + `"`

// maximalSpecs are specs at the override limits, one per way of
// amplifying.
func maximalSpecs() map[string]backendsv1alpha1.HttpBackendSpec {
	flat := func(i int) string { return fmt.Sprintf("x%02d", i) }
	shared := func(i int) string { return deepPath("b", fmt.Sprintf("x%02d", i)) }
	distinct := func(i int) string { return deepPath(fmt.Sprintf("b%02d", i), "x") }
	bigNumber := "9.99999999999999999999999999e31" // written in 32 digits
	spec := func(overrides []backendsv1alpha1.Override) backendsv1alpha1.HttpBackendSpec {
		return backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: overrides}
	}
	return map[string]backendsv1alpha1.HttpBackendSpec{
		"escaping strings":      spec(fillOverrides(flat, escapingValue)),
		"control characters":    spec(fillOverrides(flat, `"`+strings.Repeat(`\u0001`, 682)+`"`)),
		"lists of strings":      spec(fillOverrides(flat, jsonList(64, escapingValue[:63]+`"`))),
		"lists of numbers":      spec(fillOverrides(shared, jsonList(64, "1e31"))),
		"objects with padding":  spec(fillOverrides(shared, jsonObject(64, 128, "1e31"))),
		"objects of numbers":    spec(fillOverrides(shared, jsonObject(64, 0, bigNumber))),
		"distinct deep blocks":  spec(fillOverrides(distinct, "1")),
		"objects of short keys": spec(fillOverrides(flat, jsonShortObject(64))),
		"deep short keys":       spec(fillOverrides(shared, jsonShortObject(64))),
		"tiny numbers":          spec(fillOverrides(shared, jsonList(64, "-1.23456789012345678901234e-32"))),
	}
}

// smallSpec is a typical spec: a few short overrides.
func smallSpec() backendsv1alpha1.HttpBackendSpec {
	return backendsv1alpha1.HttpBackendSpec{Address: testAddress, Overrides: []backendsv1alpha1.Override{
		overrideJSON("future_string", `"value"`),
		overrideJSON("future_list", `["a", 1]`),
		overrideJSON("future_block.inner", `{"k": true}`),
	}}
}

// specSize is the size of spec as JSON, as a tenant writes it.
func specSize(tb testing.TB, spec backendsv1alpha1.HttpBackendSpec) int {
	tb.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return len(raw)
}

// renderUnchecked renders spec as HTTPFiles does, but without refusing
// files too large for a ConfigMap, so that the size of any rendering can
// be measured.
func renderUnchecked(spec backendsv1alpha1.HttpBackendSpec) (Files, error) {
	b, err := httpBody(spec)
	if err != nil {
		return Files{}, err
	}
	if err := applyOverrides(b, spec.Overrides); err != nil {
		return Files{}, err
	}
	version, err := runnerVersion(spec.Runner)
	if err != nil {
		return Files{}, err
	}
	return writeFiles("http", b, escapesJSONTemplates(spec.Runner, version))
}

// filesSize is the total size of the three files.
func filesSize(f Files) int {
	return len(f.BackendTF) + len(f.BackendTFJSON) + len(f.BackendTFBackend)
}

// TestRenderCostIsLinear renders specs at the limits and checks that the
// files and the bytes allocated are within a constant factor of the
// spec's size.
func TestRenderCostIsLinear(t *testing.T) {
	cases := maximalSpecs()
	cases["small"] = smallSpec()
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			if err := checkOverrides(spec.Overrides); err != nil {
				t.Fatalf("the spec is not within the limits: %v", err)
			}
			in := specSize(t, spec)
			var f Files
			var err error
			// Warm up: lazily built tables are not the spec's cost.
			if _, err := renderUnchecked(spec); err != nil {
				t.Fatal(err)
			}
			alloc := testtools.AllocatedBy(func() { f, err = renderUnchecked(spec) })
			if err != nil {
				t.Fatal(err)
			}
			out := filesSize(f)
			t.Logf("spec %d bytes: files %d bytes (%.1f per byte), allocated %d bytes (%.1f per byte)",
				in, out, float64(out)/float64(in), alloc, float64(alloc)/float64(in))
			if limit := fixedOutput + maxOutputPerInputByte*in; out > limit {
				t.Errorf("files of %d bytes for a spec of %d bytes, want at most %d", out, in, limit)
			}
			if limit := uint64(fixedAlloc + maxAllocPerInputByte*in); alloc > limit {
				t.Errorf("allocated %d bytes for a spec of %d bytes, want at most %d", alloc, in, limit)
			}
		})
	}
}

// BenchmarkRenderOverrides renders a small spec and the largest spec
// within the limits, and reports the bytes of files and the bytes
// allocated per byte of spec: the two ratios stay within a constant
// factor whatever the size.
func BenchmarkRenderOverrides(b *testing.B) {
	cases := map[string]backendsv1alpha1.HttpBackendSpec{
		"small":   smallSpec(),
		"maximal": maximalSpecs()["objects with padding"],
	}
	for name, spec := range cases {
		b.Run(name, func(b *testing.B) {
			in := specSize(b, spec)
			b.ReportAllocs()
			b.SetBytes(int64(in))
			var out, n int
			alloc := testtools.AllocatedBy(func() {
				for b.Loop() {
					f, err := renderUnchecked(spec)
					if err != nil {
						b.Fatal(err)
					}
					out = filesSize(f)
					n++
				}
			})
			b.ReportMetric(float64(out)/float64(in), "out-B/in-B")
			b.ReportMetric(float64(alloc)/float64(n)/float64(in), "alloc-B/in-B")
		})
	}
}
