package outputs

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Bounds of what a RemoteState publishes.
const (
	// MaxObjectBytes is the most data, keys and values together, that the
	// API server accepts in a ConfigMap or a Secret.
	MaxObjectBytes = corev1.MaxSecretSize
	// MaxOutputs bounds the number of outputs read into memory for one
	// publication: each kept output costs memory beyond its bytes.
	MaxOutputs = 4096
	// maxReadBytes bounds the outputs of each class that one read keeps,
	// as the state writes them: JSON escapes (Terraform writes <, > and &
	// as \u003c, \u003e and \u0026) make them larger than what is
	// published, which checkFits measures exactly afterwards.
	maxReadBytes = 2 * MaxObjectBytes
)

// ErrTooLarge is matched by errors about outputs that cannot be published
// because they do not fit a ConfigMap or a Secret, or are too many. It is
// the same sentinel as statefile.ErrOutputsTooLarge, which the streaming
// reader returns when it stops early.
var ErrTooLarge = statefile.ErrOutputsTooLarge

// TooLargeError reports selected outputs (with defaults) whose published
// data would exceed what the API server accepts in their object.
type TooLargeError struct {
	// Object is "ConfigMap" (plain outputs) or "Secret" (sensitive ones).
	Object string
	// Size is the data the object would hold, keys and values, in bytes.
	Size int
	// Limit is MaxObjectBytes.
	Limit int
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the outputs for the %s hold %d bytes, more than the %d a %s can hold", e.Object, e.Size, e.Limit, e.Object)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Read streams a state from r and returns it with the outputs to publish:
// those selectors name (all when there are none), merged with defaults as
// Select does. It keeps only the selected outputs, and refuses outputs that
// cannot fit in a ConfigMap (plain) or a Secret (sensitive), or more than
// MaxOutputs of them, with an error matching ErrTooLarge, before they are
// built: its memory is bounded by twice MaxObjectBytes per class and by
// MaxOutputs, not by the state. An encrypted state is decrypted with dec
// (see statefile.Decryption); without one it is an error matching
// statefile.ErrEncrypted. Other errors are statefile's and Select's.
func Read(r io.Reader, dec *statefile.Decryption, defaults map[string]json.RawMessage, selectors []Selector) (*statefile.State, []Value, error) {
	return ReadGranted(r, dec, defaults, selectors, nil)
}

// Grant limits what ReadGranted publishes to what the producer of a state
// of another namespace grants.
type Grant struct {
	// Names, when not nil, are the only outputs read at all: any other is
	// skipped unread, and never held in memory.
	Names map[string]bool
	// Allows reports whether an output read, sensitive or not, may be
	// published.
	Allows func(name string, sensitive bool) bool
}

// NotGrantedError is a selected output that the grant does not allow
// once read: a sensitive output that it grants only as a plain one.
type NotGrantedError struct {
	// Names of the outputs, sorted.
	Names []string
}

func (e *NotGrantedError) Error() string {
	return fmt.Sprintf("outputs %s are sensitive, and no grant names them in sensitiveOutputs", strings.Join(e.Names, ", "))
}

// ReadGranted is Read limited by grant (nil: no limit). An output of the
// state the grant does not allow is withheld, as if the state did not
// hold it: a default of spec.defaults may then fill it, when the grant
// allows its name. A selector naming a withheld output is a
// *NotGrantedError.
func ReadGranted(r io.Reader, dec *statefile.Decryption, defaults map[string]json.RawMessage, selectors []Selector, grant *Grant) (*statefile.State, []Value, error) {
	opts := statefile.Options{
		MaxPlainBytes:     maxReadBytes,
		MaxSensitiveBytes: maxReadBytes,
		MaxOutputs:        MaxOutputs,
		Decryption:        dec,
		Want:              wanted(selectors, grant),
	}
	st, err := statefile.ReadOutputs(r, opts)
	if err != nil {
		return nil, nil, err
	}
	if grant != nil {
		withheld := withhold(st, grant)
		if err := notGranted(selectors, withheld); err != nil {
			return nil, nil, err
		}
		defaults = grantedDefaults(defaults, grant)
	}
	values, err := Select(st, defaults, selectors)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFits(values); err != nil {
		return nil, nil, err
	}
	return st, values, nil
}

// wanted is the statefile.Options.Want of selectors under grant: the
// names selected, of those the grant names; nil keeps every output.
func wanted(selectors []Selector, grant *Grant) func(string) bool {
	var names map[string]bool
	if grant != nil && grant.Names != nil {
		names = grant.Names
	}
	if len(selectors) == 0 {
		if names == nil {
			return nil
		}
		return func(name string) bool { return names[name] }
	}
	selected := make(map[string]bool, len(selectors))
	for _, sel := range selectors {
		selected[sel.Name] = names == nil || names[sel.Name]
	}
	return func(name string) bool { return selected[name] }
}

// withhold removes from st the outputs grant does not allow, and returns
// their names.
func withhold(st *statefile.State, grant *Grant) map[string]bool {
	var withheld map[string]bool
	for name, out := range st.Outputs {
		if grant.Allows(name, out.Sensitive) {
			continue
		}
		if withheld == nil {
			withheld = map[string]bool{}
		}
		withheld[name] = true
		delete(st.Outputs, name)
	}
	return withheld
}

// notGranted is the error of selectors that name withheld outputs; nil
// when none does.
func notGranted(selectors []Selector, withheld map[string]bool) error {
	var names []string
	for _, sel := range selectors {
		if withheld[sel.Name] {
			names = append(names, sel.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return &NotGrantedError{Names: slices.Compact(names)}
}

// grantedDefaults are the defaults whose names grant allows as plain
// outputs: what is published from a state of another namespace stays
// within what its producer grants, defaults included, so that a narrowed
// grant removes exactly what it no longer names.
func grantedDefaults(defaults map[string]json.RawMessage, grant *Grant) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(defaults))
	for name, raw := range defaults {
		if grant.Allows(name, false) {
			out[name] = raw
		}
	}
	return out
}

// checkFits refuses values whose ConfigMap or Secret data would exceed
// MaxObjectBytes, counted as the API server counts it: keys and values.
func checkFits(values []Value) error {
	var plain, sensitive int
	for _, v := range values {
		if v.Sensitive {
			sensitive += len(v.Key) + len(v.Data)
		} else {
			plain += len(v.Key) + len(v.Data)
		}
	}
	switch {
	case plain > MaxObjectBytes:
		return &TooLargeError{Object: "ConfigMap", Size: plain, Limit: MaxObjectBytes}
	case sensitive > MaxObjectBytes:
		return &TooLargeError{Object: "Secret", Size: sensitive, Limit: MaxObjectBytes}
	}
	return nil
}
