package testtools

import "io"

// ReadStream reads to its end the body a streaming state reader (the
// StreamState of internal/stateclient or internal/cos) hands to read, for
// tests that want a whole state; nil when there is none. The packages
// themselves have no such call, so that no caller holds a whole state.
func ReadStream(stream func(read func(io.Reader) error) (found bool, size int64, err error)) ([]byte, error) {
	var data []byte
	found, _, err := stream(func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(r)
		return err
	})
	if err != nil || !found {
		return nil, err
	}
	return data, nil
}
