package history

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store is where a history keeps its snapshots: an object store, such as
// a COS bucket. Keys are Key's; a Store checks nothing of them.
type Store interface {
	// Put writes size bytes of body under key, never over an existing
	// object (an error wrapping ErrExists then), and has the store check
	// them against md5sum. body is streamed.
	Put(ctx context.Context, key string, body io.Reader, size int64, md5sum [16]byte) error
	// List lists the objects whose key starts with prefix, at most limit
	// of them (more is an error wrapping ErrCrowded).
	List(ctx context.Context, prefix string, limit int) ([]Object, error)
	// Delete deletes the object of key; one already gone is no error.
	Delete(ctx context.Context, key string) error
	// Stream reads the object of key, checked against the MD5 it was
	// written with, at most limit bytes, and hands it to read as it
	// arrives; found is false when there is none.
	Stream(ctx context.Context, key string, limit int64, read func(io.Reader) error) (found bool, size int64, err error)
}

// Object is an object a Store listed.
type Object struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// ErrExists is wrapped by the error of Store.Put for a key an object
// already has: a snapshot's key names its content, so it is stored.
var ErrExists = errors.New("an object already has this key")

// ErrCrowded is wrapped by the error of Store.List for a prefix holding
// more objects than the limit.
var ErrCrowded = errors.New("the prefix holds more objects than a history lists")
