package outputs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/infrastate/backend-operator/internal/testtools"
)

// FuzzRead drives the RemoteState pipeline (stream, select, check the
// published size) with every input, with and without selectors and
// defaults, and checks that it never panics, that what it would publish
// fits a ConfigMap and a Secret, and that it never allocates more than a
// fixed amount plus a small multiple of its input.
func FuzzRead(f *testing.F) {
	f.Add([]byte(everyShape))
	f.Add([]byte(stateWith(`"a":{"value":"x","type":"string"},"..":{"value":1,"type":"number"}`)))
	f.Add([]byte(stateWith(`"a":{"value":[[[[1]]]],"type":"dynamic","sensitive":true}`)))
	f.Add([]byte(`{"version":4,"outputs":{"a":{"type":"string"}}}`))
	f.Add([]byte(`<html>not a state</html>`))
	defaults := map[string]json.RawMessage{"region": json.RawMessage(`"ap-guangzhou"`), "a": json.RawMessage(`["d"]`)}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, selectors := range [][]Selector{nil, {{Name: "a", Type: TypeAny}, {Name: "region"}}} {
			var values []Value
			var err error
			alloc := testtools.AllocatedBy(func() { _, values, err = Read(bytes.NewReader(data), nil, defaults, selectors) })
			if bound := uint64(256<<10 + 10*len(data)); alloc > bound {
				t.Fatalf("Read allocated %d bytes for %d bytes of input, more than %d", alloc, len(data), bound)
			}
			if err != nil {
				continue
			}
			if err := checkFits(values); err != nil {
				t.Fatalf("Read returned values that do not fit: %v", err)
			}
			if len(values) > MaxOutputs+len(defaults) {
				t.Fatalf("Read returned %d values, more than %d", len(values), MaxOutputs+len(defaults))
			}
		}
	})
}
