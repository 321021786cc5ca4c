package outputs

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/infrastate/backend-operator/internal/jsonbounds"
)

// Bounds of spec.defaults, the same as the admission policy of
// config/admission enforces: a default value nests at most two levels (a
// scalar, or a list or object whose members are scalars or lists or
// objects of scalars), every list or object has at most
// MaxDefaultMembers members, strings have at most MaxDefaultString bytes,
// and all defaults together measure at most MaxDefaultsSize. Sizes count
// the bytes of strings and object keys (the defaults' names included) and
// jsonbounds.ScalarSize for any other scalar.
const (
	MaxDefaultDepth   = 2
	MaxDefaultMembers = 64
	MaxDefaultString  = 65536
	MaxDefaultsSize   = 128 << 10
)

// defaultBounds is the shape of one default value.
var defaultBounds = jsonbounds.Bounds{
	MaxDepth:   MaxDefaultDepth,
	MaxMembers: MaxDefaultMembers,
	MaxString:  MaxDefaultString,
}

// CheckDefaults checks spec.defaults against the bounds above and that
// each name is a valid ConfigMap key, before anything is decoded into
// memory beyond one token at a time. Errors wrap ErrInvalidDefault and name
// the default, never its value.
func CheckDefaults(defaults map[string]json.RawMessage) error {
	names := make([]string, 0, len(defaults))
	for name := range defaults {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		if msgs := validation.IsConfigMapKey(name); len(msgs) > 0 {
			return fmt.Errorf("%w: %q is not a valid ConfigMap key", ErrInvalidDefault, name)
		}
		size, err := jsonbounds.Measure(defaults[name], defaultBounds)
		switch {
		case errors.Is(err, jsonbounds.ErrNotJSON):
			return fmt.Errorf("%w: the value of %q is not JSON", ErrInvalidDefault, name)
		case err != nil:
			return fmt.Errorf("%w: the value of %q must nest at most two levels (lists or objects of at most %d members) with strings of at most %d bytes",
				ErrInvalidDefault, name, MaxDefaultMembers, MaxDefaultString)
		}
		total += len(name) + size
	}
	if total > MaxDefaultsSize {
		return fmt.Errorf("%w: the values total %d bytes, at most %d are allowed", ErrInvalidDefault, total, MaxDefaultsSize)
	}
	return nil
}
