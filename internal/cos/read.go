package cos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	errtext "github.com/infrastate/backend-operator/internal/redact"
	"github.com/infrastate/backend-operator/internal/stateclient"
)

// maxLockBytes bounds a .tflock object: Terraform's LockInfo JSON is a few
// hundred bytes.
const maxLockBytes int64 = 1 << 20

// md5Header is the metadata header Terraform writes on every object it
// puts (state and lock): the hex MD5 of the body.
const md5Header = "X-Cos-Meta-Md5"

// Object is a state object as read from COS.
type Object struct {
	// Data is the object's body, verified against MD5; ReadState fills it,
	// StreamState hands it over instead.
	Data []byte
	// MD5 is the object's x-cos-meta-md5: the lower-case hex MD5 of Data.
	MD5 string
	// Size is the size of the body in bytes.
	Size int64
}

// LockInfo is the holder of a state lock, from the .tflock object
// Terraform's cos backend writes: the same LockInfo JSON every Terraform
// backend uses. Its ID is the lock ID as Terraform's cos backend reports it
// and as terraform force-unlock expects it: the x-cos-meta-md5 of the
// .tflock object. Terraform puts a UUID in the JSON's ID but replaces it
// with this checksum when it reads the lock; ReadLock does the same. Path
// is the key of the .tflock object.
type LockInfo = stateclient.LockInfo

// ReadState reads the state object of workspace ("default" or a named
// workspace; see StateKey) into memory. It returns nil, nil when the
// object does not exist. Like Terraform it refuses an object without a
// valid x-cos-meta-md5 (ErrChecksumMissing) or whose body does not match
// it (ErrChecksumMismatch). A body larger than Config.MaxStateBytes is
// ErrStateTooLarge; it is not read past the limit. A missing bucket is
// ErrBucketNotFound, not a missing state.
//
// ReadState holds the whole state: prefer StreamState, whose memory use
// does not grow with the state.
func (c *Client) ReadState(ctx context.Context, workspace string) (*Object, error) {
	var data bytes.Buffer
	obj, err := c.readObject(ctx, workspace, false, func(r io.Reader) error {
		_, err := data.ReadFrom(r)
		return err
	})
	if err != nil || obj == nil {
		return nil, err
	}
	obj.Data = data.Bytes()
	if obj.Data == nil {
		obj.Data = []byte{} // an empty object, as io.ReadAll gives it
	}
	return obj, nil
}

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
		if err := json.Unmarshal(data, &info); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidLock, errtext.JSONError(err))
		}
		return nil
	})
	if err != nil || obj == nil {
		return nil, err
	}
	info.ID = obj.MD5
	info.Rewrite(c.redact.scrub)
	return &info, nil
}

// readObject streams the state object of workspace, or its lock object
// when lock is true, to read (see streamObject). It returns nil, nil when
// the object does not exist, and otherwise an Object without Data. Its
// errors are redacted.
func (c *Client) readObject(ctx context.Context, workspace string, lock bool, read func(io.Reader) error) (*Object, error) {
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
	return &Object{MD5: sum, Size: size}, nil
}

// stateKey validates a workspace name (see validateWorkspace) and returns
// its state key.
func (c *Client) stateKey(workspace string) (string, error) {
	if err := validateWorkspace(workspace); err != nil {
		return "", err
	}
	return StateKey(c.prefix, c.key, workspace), nil
}
