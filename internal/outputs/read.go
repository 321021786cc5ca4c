package outputs

import (
	"encoding/json"
	"fmt"
	"io"

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
	opts := statefile.Options{
		MaxPlainBytes:     maxReadBytes,
		MaxSensitiveBytes: maxReadBytes,
		MaxOutputs:        MaxOutputs,
		Decryption:        dec,
	}
	if len(selectors) > 0 {
		wanted := make(map[string]bool, len(selectors))
		for _, sel := range selectors {
			wanted[sel.Name] = true
		}
		opts.Want = func(name string) bool { return wanted[name] }
	}
	st, err := statefile.ReadOutputs(r, opts)
	if err != nil {
		return nil, nil, err
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
