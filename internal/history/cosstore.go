package history

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/infrastate/backend-operator/internal/cos"
)

// COSStore is a Store in a COS bucket, through c.
func COSStore(c *cos.Client) Store { return cosStore{c} }

// cosStore adapts the COS client's errors to the Store's.
type cosStore struct{ c *cos.Client }

func (s cosStore) Put(ctx context.Context, key string, body io.Reader, size int64, md5sum [16]byte) error {
	err := s.c.PutObject(ctx, key, body, size, md5sum)
	if errors.Is(err, cos.ErrObjectExists) {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

func (s cosStore) List(ctx context.Context, prefix string, limit int) ([]Object, error) {
	objects, err := s.c.ListObjects(ctx, prefix, limit)
	if errors.Is(err, cos.ErrTooManyObjects) {
		return nil, fmt.Errorf("%w: %w", ErrCrowded, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Object, 0, len(objects))
	for _, o := range objects {
		out = append(out, Object{Key: o.Key, Size: o.Size, LastModified: o.LastModified})
	}
	return out, nil
}

func (s cosStore) Delete(ctx context.Context, key string) error { return s.c.DeleteObject(ctx, key) }

func (s cosStore) Stream(ctx context.Context, key string, limit int64, read func(io.Reader) error) (bool, int64, error) {
	return s.c.StreamObject(ctx, key, limit, read)
}
