package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// outputsReader streams a v4 state with n outputs named o0, o1, ... whose
// values are value, and calls atEOF once, when the last byte has been read,
// so that a test can measure what the parser keeps at that moment.
func outputsReader(n int, value string, sensitive bool, atEOF func()) io.Reader {
	var next int
	sens := ""
	if sensitive {
		sens = `,"sensitive":true`
	}
	gen := &chunkReader{next: func() ([]byte, bool) {
		if next == n {
			return nil, false
		}
		sep := ","
		if next == 0 {
			sep = ""
		}
		chunk := fmt.Sprintf(`%s"o%d":{"value":%s,"type":"string"%s}`, sep, next, value, sens)
		next++
		return []byte(chunk), true
	}}
	return io.MultiReader(
		strings.NewReader(`{"version":4,"serial":3,"lineage":"l","terraform_version":"1.5.7","outputs":{`),
		gen,
		&eofHook{r: strings.NewReader(`}}`), hook: atEOF},
	)
}

// chunkReader serves the chunks of next in order.
type chunkReader struct {
	next func() ([]byte, bool)
	buf  []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		chunk, ok := c.next()
		if !ok {
			return 0, io.EOF
		}
		c.buf = chunk
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// eofHook calls hook the first time r reports io.EOF.
type eofHook struct {
	r    io.Reader
	hook func()
	done bool
}

func (e *eofHook) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) && !e.done {
		e.done = true
		if e.hook != nil {
			e.hook()
		}
	}
	return n, err
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestReadSummaryMemoryIndependentOfOutputs streams a state of 300,000
// outputs (a 2 MB form of the 1.7 million outputs that took the manager from
// 57 MB to 298 MB) and measures the live heap at the moment the parser has
// read the last byte: the summary keeps no per-output data.
func TestReadSummaryMemoryIndependentOfOutputs(t *testing.T) {
	const outputs = 300_000
	before := liveHeap()
	var atEOF uint64
	sum, err := ReadSummary(outputsReader(outputs, `""`, false, func() { atEOF = liveHeap() }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.OutputCount != outputs {
		t.Errorf("OutputCount = %d, want %d", sum.OutputCount, outputs)
	}
	if grew := int64(atEOF) - int64(before); grew > 1<<20 {
		t.Errorf("the live heap grew by %d bytes while reading %d outputs; a summary must not keep per-output data", grew, outputs)
	}
}

// TestReadOutputsBudget checks that outputs that cannot fit in a ConfigMap
// or a Secret are refused as soon as the budget is crossed, with live
// memory bounded by the budget, and that the refusal says which class.
func TestReadOutputsBudget(t *testing.T) {
	const budget = 1 << 20
	cases := map[string]struct {
		sensitive bool
	}{
		"plain":     {},
		"sensitive": {sensitive: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := liveHeap()
			var peak uint64
			// 40,000 outputs of 300-byte values: 12 MB of kept data if
			// nothing bounded it.
			r := outputsReader(40_000, `"`+strings.Repeat("v", 298)+`"`, tc.sensitive, nil)
			counting := &heapAtBytes{r: r, every: 1 << 20, sample: func() {
				if h := liveHeap(); h > peak {
					peak = h
				}
			}}
			_, err := ReadOutputs(counting, Options{MaxPlainBytes: budget, MaxSensitiveBytes: budget, MaxOutputs: 4096})
			var tooLarge *OutputsTooLargeError
			if !errors.As(err, &tooLarge) || !errors.Is(err, ErrOutputsTooLarge) {
				t.Fatalf("ReadOutputs() error = %v, want an OutputsTooLargeError", err)
			}
			if tooLarge.Sensitive != tc.sensitive || tooLarge.Limit != budget {
				t.Errorf("error = %+v, want Sensitive %t and Limit %d", tooLarge, tc.sensitive, budget)
			}
			if counting.n > 4*budget {
				t.Errorf("read %d bytes before refusing: the refusal must come once the budget is crossed", counting.n)
			}
			if grew := int64(peak) - int64(before); grew > 3*budget {
				t.Errorf("the live heap grew by %d bytes with a %d-byte budget", grew, budget)
			}
		})
	}
}

// TestReadOutputsOneValueTooLarge checks the refusal of one output value
// larger than both budgets: reading stops inside the value, before
// Terraform writes "sensitive", so the error names no class it cannot
// know, whichever class the output has.
func TestReadOutputsOneValueTooLarge(t *testing.T) {
	for _, sensitive := range []bool{false, true} {
		t.Run(fmt.Sprintf("sensitive=%t", sensitive), func(t *testing.T) {
			r := outputsReader(1, `"`+strings.Repeat("v", 8<<10)+`"`, sensitive, nil)
			_, err := ReadOutputs(r, Options{MaxPlainBytes: 1 << 10, MaxSensitiveBytes: 2 << 10})
			var tooLarge *OutputsTooLargeError
			if !errors.As(err, &tooLarge) {
				t.Fatalf("ReadOutputs() error = %v, want an OutputsTooLargeError", err)
			}
			want := OutputsTooLargeError{Limit: 2 << 10, OneValue: true}
			if diff := cmp.Diff(want, *tooLarge); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
			if msg := err.Error(); strings.Contains(msg, "plain") || strings.Contains(msg, "sensitive") || !strings.Contains(msg, "an output value of the state is larger than 2 KiB") {
				t.Errorf("error %q must say one value is too large without naming a class", msg)
			}
		})
	}
}

// TestReadOutputsCountBound checks that many tiny outputs, whose bytes fit
// the budget but whose number would cost memory per entry, are refused by
// count with live memory bounded.
func TestReadOutputsCountBound(t *testing.T) {
	before := liveHeap()
	var peak uint64
	r := &heapAtBytes{r: outputsReader(1_700_000, `""`, false, nil), every: 1 << 20, sample: func() {
		if h := liveHeap(); h > peak {
			peak = h
		}
	}}
	_, err := ReadOutputs(r, Options{MaxPlainBytes: 1 << 20, MaxSensitiveBytes: 1 << 20, MaxOutputs: 4096})
	var tooLarge *OutputsTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.MaxOutputs != 4096 {
		t.Fatalf("ReadOutputs() error = %v, want an OutputsTooLargeError for 4096 outputs", err)
	}
	if !strings.Contains(err.Error(), "more than 4096 outputs") {
		t.Errorf("error %q does not say how many outputs are allowed", err)
	}
	if grew := int64(peak) - int64(before); grew > 4<<20 {
		t.Errorf("the live heap grew by %d bytes before the refusal", grew)
	}
}

// heapAtBytes calls sample every `every` bytes read through it.
type heapAtBytes struct {
	r      io.Reader
	every  int64
	sample func()
	n      int64
	next   int64
}

func (h *heapAtBytes) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if h.n >= h.next {
		h.sample()
		h.next = h.n + h.every
	}
	return n, err
}

// TestReadOutputsSelects checks that only wanted outputs are kept, that
// every output is counted, and that kept values are compact JSON.
func TestReadOutputsSelects(t *testing.T) {
	want := map[string]bool{"names": true, "secret": true, "absent": true}
	st, err := ReadOutputs(strings.NewReader(fullState), Options{Want: func(name string) bool { return want[name] }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Output{}
	maps.Copy(got, st.Outputs)
	wantOutputs := map[string]Output{
		"names":  {Value: []byte(`["a","b"]`), Type: []byte(`["list","string"]`)},
		"secret": {Value: []byte(`"hunter2"`), Type: []byte(`"string"`), Sensitive: true},
	}
	if diff := cmp.Diff(wantOutputs, got); diff != "" {
		t.Errorf("outputs mismatch (-want +got):\n%s", diff)
	}
	if st.OutputCount != 11 || st.Serial != 42 || st.Lineage != "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a" {
		t.Errorf("state = %+v, want 11 outputs, serial 42 and the lineage", st)
	}
}

// TestErrorsQuoteNoInput checks that no error quotes the bytes it read: a
// probe aimed at something that is not a state server must not learn what
// that server answered through the status.
func TestErrorsQuoteNoInput(t *testing.T) {
	const marker = "Zq~"
	inputs := map[string]string{
		"a page":                 "<html>" + marker + "</html>",
		"a bad literal":          `{"version":4,"x":t` + marker + `}`,
		"a bad value":            `{"version":4,"x":` + marker + `}`,
		"a bad key":              `{` + marker + `:1}`,
		"after a value":          `{"version":4} ` + marker,
		"after a pair":           `{"version":4 ` + marker + `}`,
		"in an array":            `{"version":4,"x":[1 ` + marker + `]}`,
		"a bad escape":           `{"version":4,"x":"\` + marker + `"}`,
		"a control character":    "{\"version\":4,\"x\":\"" + marker + "\x01\"}",
		"a bad number":           `{"version":4,"serial":-` + marker + `}`,
		"a serial overflow":      `{"version":4,"serial":99999999999999999999` + `}`,
		"a lineage of a number":  `{"version":4,"lineage":7` + marker + `}`,
		"an output without type": `{"version":4,"outputs":{"` + marker + `":{"value":1}}}`,
		"an unknown output type": `{"version":4,"outputs":{"a":{"value":1,"type":"` + marker + `"}}}`,
		"a bad complex type":     `{"version":4,"outputs":{"a":{"value":1,"type":["` + marker + `","string"]}}}`,
		"a non-boolean flag":     `{"version":4,"outputs":{"a":{"type":"string","sensitive":"` + marker + `"}}}`,
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			_, errSummary := ReadSummary(strings.NewReader(in), nil)
			_, errOutputs := ReadOutputs(strings.NewReader(in), Options{})
			for _, err := range []error{errSummary, errOutputs} {
				if err == nil {
					t.Fatalf("input %q was accepted", in)
				}
				for _, part := range []string{marker, "Zq", "'Z'", `"Z"`, "'<'", `"<"`, "99999999999999999999"} {
					if strings.Contains(err.Error(), part) {
						t.Errorf("error %q quotes input bytes %q", err, part)
					}
				}
			}
		})
	}
}

// TestLongMetadataIsRefused checks that a lineage or version far longer
// than Terraform writes is refused instead of kept.
func TestLongMetadataIsRefused(t *testing.T) {
	long := strings.Repeat("x", 2000)
	for _, field := range []string{"lineage", "terraform_version"} {
		in := fmt.Sprintf(`{"version":4,%q:%q}`, field, long)
		if _, err := ReadSummary(strings.NewReader(in), nil); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("ReadSummary() with a 2000-byte %s: error %v, want one naming the field", field, err)
		}
	}
	ok := fmt.Sprintf(`{"version":4,"lineage":%q}`, strings.Repeat("l", 200))
	if sum, err := ReadSummary(bytes.NewReader([]byte(ok)), nil); err != nil || len(sum.Lineage) != 200 {
		t.Errorf("ReadSummary() with a 200-byte lineage = %q, %v; it is kept whole, the status clips it", sum.Lineage, err)
	}
}

// TestReadOutputsCountsTypes checks that the types of kept outputs count
// towards the budget: a state of outputs whose types are large but whose
// values are null must not grow memory beyond it.
func TestReadOutputsCountsTypes(t *testing.T) {
	var attrs strings.Builder
	for i := range 20_000 {
		if i > 0 {
			attrs.WriteByte(',')
		}
		fmt.Fprintf(&attrs, `"attribute_%d":"string"`, i)
	}
	typ := `["object",{` + attrs.String() + `}]`
	var doc strings.Builder
	doc.WriteString(`{"version":4,"outputs":{`)
	for i := range 200 {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `"o%d":{"value":null,"type":%s}`, i, typ)
	}
	doc.WriteString(`}}`)
	before := liveHeap()
	_, err := ReadOutputs(strings.NewReader(doc.String()), Options{MaxPlainBytes: 1 << 20, MaxSensitiveBytes: 1 << 20, MaxOutputs: 4096})
	grew := int64(liveHeap()) - int64(before)
	if !errors.Is(err, ErrOutputsTooLarge) {
		t.Fatalf("ReadOutputs() error = %v, want ErrOutputsTooLarge: %d bytes of types were kept", err, 200*len(typ))
	}
	if grew > 4<<20 {
		t.Errorf("the live heap grew by %d bytes", grew)
	}
}

// TestReadOutputsUnboundedClass checks that a class without a budget is not
// bounded by the other class's budget.
func TestReadOutputsUnboundedClass(t *testing.T) {
	big := `"` + strings.Repeat("v", 4096) + `"`
	in := `{"version":4,"outputs":{"a":{"value":` + big + `,"type":"string","sensitive":true}}}`
	if _, err := ReadOutputs(strings.NewReader(in), Options{MaxPlainBytes: 1024}); err != nil {
		t.Errorf("ReadOutputs() = %v, want the sensitive output kept: its class has no budget", err)
	}
}
