package cos

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/infrastate/backend-operator/internal/lockinfo"
)

// maxLockBytes bounds a .tflock object: Terraform's LockInfo JSON is a few
// hundred bytes.
const maxLockBytes int64 = 1 << 20

// md5Header is the metadata header Terraform writes on every object it
// puts (state and lock): the hex MD5 of the body.
const md5Header = "X-Cos-Meta-Md5"

// object is what readObject learns of an object it streamed.
type object struct {
	// sum is the object's x-cos-meta-md5: the lower-case hex MD5 of its
	// body.
	sum string
	// size is the size of the body in bytes.
	size int64
}

// LockInfo is the holder of a state lock, from the .tflock object
// Terraform's cos backend writes: the same LockInfo JSON every Terraform
// backend uses. Its ID is the lock ID as Terraform's cos backend reports it
// and as terraform force-unlock expects it: the x-cos-meta-md5 of the
// .tflock object. Terraform puts a UUID in the JSON's ID but replaces it
// with this checksum when it reads the lock; ReadLock does the same. Path
// is the key of the .tflock object.
type LockInfo = lockinfo.Info

// ReadLock reads the lock object of workspace (the state key plus
// ".tflock"). It returns nil, nil when there is none, that is when the
// state is not locked. The object must pass the same checksum checks as a
// state object (Terraform writes x-cos-meta-md5 on it too and refuses it
// otherwise); a body that is not LockInfo JSON, or that is above 1 MiB, is
// ErrInvalidLock, reported without quoting the body. The returned ID is
// the object's checksum, as Terraform reports it; the other fields are
// scrubbed of the client's credentials, like its errors.
func (c *Client) ReadLock(ctx context.Context, workspace string) (*LockInfo, error) {
	var info LockInfo
	obj, err := c.readObject(ctx, workspace, true, func(r io.Reader) error {
		data, err := io.ReadAll(r) // to the end: the checksum is checked there
		if err != nil {
			return err
		}
		if info, err = lockinfo.Decode(data); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidLock, err)
		}
		return nil
	})
	if err != nil || obj == nil {
		return nil, err
	}
	info.ID = obj.sum
	info.Rewrite(c.redact.scrub)
	return &info, nil
}

// readObject streams the state object of workspace, or its lock object
// when lock is true, to read (see streamObject). It returns nil, nil when
// the object does not exist, and otherwise its checksum and size. Its
// errors are redacted.
func (c *Client) readObject(ctx context.Context, workspace string, lock bool, read func(io.Reader) error) (*object, error) {
	key, err := c.stateKey(workspace)
	if err != nil {
		return nil, err
	}
	op, limit, tooLarge := "read state object ", c.maxStateBytes, ErrStateTooLarge
	if lock {
		key = LockKey(key)
		op, limit, tooLarge = "read lock object ", maxLockBytes, ErrInvalidLock
	}
	sum, size, found, err := c.streamObject(ctx, op+strconv.Quote(key), key, limit, tooLarge, read)
	if err != nil || !found {
		return nil, c.redact.error(err)
	}
	return &object{sum: sum, size: size}, nil
}

// stateKey validates a workspace name (see validateWorkspace) and returns
// its state key.
func (c *Client) stateKey(workspace string) (string, error) {
	if err := validateWorkspace(workspace); err != nil {
		return "", err
	}
	return StateKey(c.prefix, c.key, workspace), nil
}
