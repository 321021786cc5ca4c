package cos

import (
	"context"
	"crypto/md5" //nolint:gosec // x-cos-meta-md5 is Terraform's integrity check, not a security control
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

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
	// Data is the object's body, verified against MD5.
	Data []byte
	// MD5 is the object's x-cos-meta-md5: the lower-case hex MD5 of Data.
	MD5 string
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
// workspace; see StateKey). It returns nil, nil when the object does not
// exist. Like Terraform it refuses an object without a valid
// x-cos-meta-md5 (ErrChecksumMissing) or whose body does not match it
// (ErrChecksumMismatch). A body larger than Config.MaxStateBytes is
// ErrStateTooLarge; it is not read past the limit. A missing bucket is
// ErrBucketNotFound, not a missing state.
func (c *Client) ReadState(ctx context.Context, workspace string) (*Object, error) {
	key, err := c.stateKey(workspace)
	if err != nil {
		return nil, err
	}
	data, sum, found, err := c.getObject(ctx, "read state object "+strconv.Quote(key), key, c.maxStateBytes, ErrStateTooLarge)
	if err != nil || !found {
		return nil, err
	}
	return &Object{Data: data, MD5: sum}, nil
}

// ReadLock reads the lock object of workspace (the state key plus
// ".tflock"). It returns nil, nil when there is none, that is when the
// state is not locked. The object must pass the same checksum checks as a
// state object (Terraform writes x-cos-meta-md5 on it too and refuses it
// otherwise); a body that is not LockInfo JSON is ErrInvalidLock. The
// returned ID is the object's checksum, as Terraform reports it.
func (c *Client) ReadLock(ctx context.Context, workspace string) (*LockInfo, error) {
	stateKey, err := c.stateKey(workspace)
	if err != nil {
		return nil, err
	}
	key := LockKey(stateKey)
	op := "read lock object " + strconv.Quote(key)
	data, sum, found, err := c.getObject(ctx, op, key, maxLockBytes, ErrInvalidLock)
	if err != nil || !found {
		return nil, err
	}
	var info LockInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("%s in bucket %q: %w: %w", op, c.bucket, ErrInvalidLock, err)
	}
	info.ID = sum
	return &info, nil
}

// stateKey validates a workspace name as Terraform does (blank names are
// refused) and returns its state key.
func (c *Client) stateKey(workspace string) (string, error) {
	if strings.TrimSpace(workspace) == "" {
		return "", fmt.Errorf("%w: the workspace name must not be empty", ErrInvalidConfig)
	}
	return StateKey(c.prefix, c.key, workspace), nil
}

// getObject GETs key and checks it as Terraform's getObject does: a 404
// is "not found" (found false, no error), the x-cos-meta-md5 must be 32
// characters and equal the hex MD5 of the body. Bodies above limit are
// refused with tooLarge.
func (c *Client) getObject(ctx context.Context, op, key string, limit int64, tooLarge error) (data []byte, sum string, found bool, err error) {
	resp, err := c.sdk.Object.Get(ctx, key, nil)
	if err != nil {
		err = c.classify(op, key, resp, err)
		if resp != nil && resp.StatusCode == http.StatusNotFound && !errors.Is(err, ErrBucketNotFound) {
			return nil, "", false, nil
		}
		return nil, "", false, err
	}
	defer func() { _ = resp.Body.Close() }()
	where := fmt.Sprintf("%s in bucket %q", op, c.bucket)

	sum = resp.Header.Get(md5Header)
	if len(sum) != md5.Size*2 {
		if sum == "" {
			return nil, "", false, fmt.Errorf("%s: %w: the object has no x-cos-meta-md5", where, ErrChecksumMissing)
		}
		return nil, "", false, fmt.Errorf("%s: %w: x-cos-meta-md5 %q is not 32 hex digits", where, ErrChecksumMissing, sum)
	}
	if resp.ContentLength > limit {
		return nil, "", false, fmt.Errorf("%s: %w: Content-Length %d is above the %d byte limit", where, tooLarge, resp.ContentLength, limit)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", false, transportError(where+": reading the body", err)
	}
	if int64(len(data)) > limit {
		return nil, "", false, fmt.Errorf("%s: %w: the body is above the %d byte limit", where, tooLarge, limit)
	}
	got := md5.Sum(data) //nolint:gosec // see import
	if hex.EncodeToString(got[:]) != sum {
		// Terraform compares the lower-case hex digest with the header
		// as is, so an upper-case checksum does not match either.
		return nil, "", false, fmt.Errorf("%s: %w: body MD5 %x, x-cos-meta-md5 %s", where, ErrChecksumMismatch, got, sum)
	}
	return data, sum, true, nil
}
