package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrOutputsTooLarge is matched by an *OutputsTooLargeError.
var ErrOutputsTooLarge = errors.New("outputs too large")

// OutputsTooLargeError reports outputs that exceed a bound of Options:
// the byte budget of their class (plain or sensitive), or the number of
// outputs kept.
type OutputsTooLargeError struct {
	// Sensitive tells which class overflowed its byte budget.
	Sensitive bool
	// Limit is the byte budget of that class, or the larger budget when
	// OneValue; 0 when MaxOutputs overflowed.
	Limit int64
	// OneValue reports a single output value larger than both budgets.
	// Reading stops inside it, before its class is known (Terraform
	// writes "sensitive" after "value"), so Sensitive is false.
	OneValue bool
	// MaxOutputs is the bound on the number of outputs kept, when that
	// bound overflowed; 0 otherwise.
	MaxOutputs int
}

// Error implements error.
func (e *OutputsTooLargeError) Error() string {
	switch {
	case e.MaxOutputs > 0:
		return fmt.Sprintf("the state has more than %d outputs to keep", e.MaxOutputs)
	case e.OneValue:
		return fmt.Sprintf("an output value of the state is larger than %d KiB", e.Limit>>10)
	}
	class := "plain"
	if e.Sensitive {
		class = "sensitive"
	}
	return fmt.Sprintf("the %s outputs of the state are larger than %d KiB", class, e.Limit>>10)
}

// Is reports whether target is ErrOutputsTooLarge.
func (e *OutputsTooLargeError) Is(target error) bool { return target == ErrOutputsTooLarge }

// Options selects the outputs ReadOutputs keeps and bounds their size.
type Options struct {
	// Want reports whether the output named name is kept; nil keeps all.
	Want func(name string) bool
	// MaxPlainBytes bounds the names, values and types of the kept outputs
	// that are not sensitive, as kept (compact JSON); 0 means no bound.
	MaxPlainBytes int64
	// MaxSensitiveBytes bounds the same for sensitive outputs; 0 means no
	// bound.
	MaxSensitiveBytes int64
	// MaxOutputs bounds the number of outputs kept: each costs memory
	// beyond its bytes, so many tiny outputs are bounded by count; 0 means
	// no bound.
	MaxOutputs int
	// Decryption opens encrypted states; without it their outputs cannot
	// be read (ErrEncrypted).
	Decryption *Decryption
}

// ReadOutputs reads a state in format version 4 from r, streaming, and
// returns its metadata, the number of its outputs and the outputs
// opts.Want selects, each value kept as compact JSON. Resources and
// unselected outputs are validated and skipped without being kept, so its
// memory is bounded by the budgets of opts, not by the state.
//
// Once the kept outputs of a class exceed its budget, or more outputs than
// MaxOutputs are to be kept, reading stops with an *OutputsTooLargeError:
// outputs that cannot fit where they are published are refused before they
// are built. An encrypted state is decrypted with opts.Decryption, within
// its bounds; without one it gives ErrEncrypted. Other errors are those of
// ReadSummary.
func ReadOutputs(r io.Reader, opts Options) (*State, error) {
	st, err := readOutputs(r, opts)
	// With a Decryption an envelope is opened or refused, so an encrypted
	// state comes back undecrypted only without one.
	if err == nil && st.Encrypted && opts.Decryption == nil {
		return nil, fmt.Errorf("%w: its outputs cannot be read without its key", ErrEncrypted)
	}
	return st, err
}

// readOutputs is ReadOutputs, with an encrypted state that was not
// decrypted returned with its clear-text metadata only.
func readOutputs(r io.Reader, opts Options) (*State, error) {
	var (
		outputs = map[string]Output{}
		used    [2]int64 // plain, sensitive
		count   int
	)
	limits := [2]int64{opts.MaxPlainBytes, opts.MaxSensitiveBytes}
	// A single value may be as large as the larger budget (or unbounded
	// when a class is): the class is known only once the whole output is
	// read.
	capLimit := maxInt(max(limits[0], limits[1]))
	if limits[0] == 0 || limits[1] == 0 {
		capLimit = maxInt(0)
	}

	md, err := readDocument(r, func(s *scanner, name string, index int) error {
		count++
		if opts.Want != nil && !opts.Want(name) {
			_, _, err := s.outputFields(index, func() error { return s.value(nil) })
			return err
		}
		var value []byte
		typ, sensitive, err := s.outputFields(index, func() error {
			raw, err := s.capture(capLimit)
			if errors.Is(err, errValueTooLong) {
				return &OutputsTooLargeError{Limit: max(limits[0], limits[1]), OneValue: true}
			}
			value = bytes.Clone(raw)
			return err
		})
		if err != nil {
			return err
		}
		class := classOf(sensitive)
		if old, ok := outputs[name]; ok { // a repeated name: the last one wins
			used[classOf(old.Sensitive)] -= int64(len(name) + len(old.Value) + len(old.Type))
		}
		used[class] += int64(len(name) + len(value) + len(typ))
		if limits[class] > 0 && used[class] > limits[class] {
			return &OutputsTooLargeError{Sensitive: sensitive, Limit: limits[class]}
		}
		outputs[name] = Output{Value: value, Type: typ, Sensitive: sensitive}
		if opts.MaxOutputs > 0 && len(outputs) > opts.MaxOutputs {
			return &OutputsTooLargeError{MaxOutputs: opts.MaxOutputs}
		}
		return nil
	}, opts.Decryption)
	if err != nil {
		return nil, err
	}
	return &State{
		Encrypted:        md.encrypted,
		Version:          SupportedVersion,
		TerraformVersion: md.terraformVersion,
		Serial:           md.serial,
		Lineage:          md.lineage,
		Outputs:          outputs,
		OutputCount:      count,
	}, nil
}

// classOf indexes the budgets: 0 plain, 1 sensitive.
func classOf(sensitive bool) int {
	if sensitive {
		return 1
	}
	return 0
}

// maxInt turns a budget into a sink limit: 0 (no budget) and budgets past
// the int range mean no limit beyond the largest int.
func maxInt(budget int64) int {
	if budget <= 0 || budget > int64(^uint(0)>>1) {
		return int(^uint(0) >> 1)
	}
	return int(budget)
}
