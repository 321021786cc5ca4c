package cos

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // x-cos-meta-md5 is Terraform's integrity check, not a security control
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	sdk "github.com/tencentyun/cos-go-sdk-v5"
)

// forbidOverwriteHeader, set to "true" on a PUT Object, makes COS refuse
// (409) to replace an object that exists.
const forbidOverwriteHeader = "X-Cos-Forbid-Overwrite"

// errNoLockID is AcquireLock's answer to a LockInfo without ID.
var errNoLockID = errors.New("acquire lock: the LockInfo has no ID; use lockinfo.New")

// LockHeldError means the state lock is held by someone else: AcquireLock
// found a lock object, or COS refused to create one because another
// writer created it first. The caller can show the holder and try again
// later.
type LockHeldError struct {
	// Bucket is the bucket of the lock object.
	Bucket string
	// Key is the key of the lock object.
	Key string
	// Holder is the lock object as ReadLock reads it: its ID is the
	// object's x-cos-meta-md5. It is nil when the holder could not be
	// read: the object vanished again after COS refused the write, or it
	// exists but is not a lock Terraform could read (Err says why).
	Holder *LockInfo
	// Err is why Holder could not be read, nil otherwise.
	Err error
}

// Error implements error. It names the holder when known.
func (e *LockHeldError) Error() string {
	msg := fmt.Sprintf("acquire lock object %q in bucket %q: the state lock is held", e.Key, e.Bucket)
	switch {
	case e.Holder != nil:
		msg += " by " + e.Holder.String()
	case e.Err != nil:
		msg += ", by a holder that cannot be read"
	default:
		msg += " by a writer that created the lock object first and released it again"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *LockHeldError) Unwrap() error { return e.Err }

// AcquireLock takes the lock of workspace with info, as Terraform's cos
// backend writes it: when there is no lock object (the state key plus
// ".tflock") it creates one holding json.Marshal(info) with info.Path set
// to the lock object's key, with x-cos-meta-md5 (and Content-MD5) the MD5
// of that body and the acl Terraform gives objects by default (private).
// It returns the lock ID: the hex MD5 of the body, which is what ReadLock
// then reports, what Terraform shows as the holder's ID and what
// ReleaseLock and `terraform force-unlock` take. info.ID must be set (a
// fresh UUID, see lockinfo.New): it is what makes the body,
// and so the lock ID, this acquisition's own.
//
// A lock already held is a *LockHeldError carrying the holder, also when
// the lock object exists but cannot be read (Holder nil, Err the reason:
// ErrChecksumMissing for example). A lock object that already holds
// exactly the body AcquireLock would write (the same info again, after an
// answer that was lost) is this caller's lock: its ID is returned.
//
// Terraform checks for the lock object and writes it under a mutex held
// through the Tencent Cloud tag service, which this client does not call.
// Instead the write carries x-cos-forbid-overwrite: true, so that COS
// refuses it (409) when the object was created between the check and the
// write; that refusal is a *LockHeldError too, with the holder read again
// (nil if it vanished in the meantime). This closes the race against
// writers that also send the header (other operators, other StateLocks).
// It does not close it against Terraform, whose write overwrites: a
// Terraform run that checked before this write may still replace the lock
// object after it. The StateLock controller then sees another holder on
// its next check and reports the lock lost. COS documents the header for
// buckets without versioning; where versioning keeps every write, the
// header may not protect anything. Options Terraform's backend may add to
// the write (encrypt, another acl) are not known to the Client and not
// sent.
//
// Its errors are redacted like every error of the Client. An invalid
// workspace name is ErrInvalidConfig.
func (c *Client) AcquireLock(ctx context.Context, workspace string, info LockInfo) (id string, err error) {
	id, err = c.acquireLock(ctx, workspace, info)
	return id, c.redact.error(err)
}

func (c *Client) acquireLock(ctx context.Context, workspace string, info LockInfo) (string, error) {
	stateKey, err := c.stateKey(workspace)
	if err != nil {
		return "", err
	}
	if info.ID == "" {
		return "", errNoLockID
	}
	key := LockKey(stateKey)
	info.Path = key
	body, err := info.Encode()
	if err != nil {
		return "", fmt.Errorf("acquire lock: %w", err)
	}
	sum := md5.Sum(body) //nolint:gosec // see import
	id := hex.EncodeToString(sum[:])

	switch held, err := c.lockHolder(ctx, workspace, key, id); {
	case err != nil:
		return "", err
	case held:
		return id, nil
	}

	resp, err := c.sdk.Object.Put(ctx, key, bytes.NewReader(body), &sdk.ObjectPutOptions{
		ACLHeaderOptions: &sdk.ACLHeaderOptions{XCosACL: DefaultACL},
		ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
			ContentMD5:    base64.StdEncoding.EncodeToString(sum[:]),
			XCosMetaXXX:   &http.Header{md5Header: {id}},
			XOptionHeader: &http.Header{forbidOverwriteHeader: {"true"}},
		},
	})
	if err == nil {
		return id, nil
	}
	err = c.classify("create lock object "+strconv.Quote(key), key, resp, err)
	if re, ok := errors.AsType[*ResponseError](err); !ok || re.StatusCode != http.StatusConflict {
		return "", err
	}
	// Refused: the object exists. Another writer created it since the
	// check, or an earlier attempt of this very PUT did (the SDK retries
	// after a 5xx or a lost answer): the holder tells which.
	switch held, err := c.lockHolder(ctx, workspace, key, id); {
	case err != nil:
		return "", err
	case held:
		return id, nil
	}
	return "", &LockHeldError{Bucket: c.bucket, Key: key}
}

// lockHolder reads the lock object of workspace, whose key is key. It
// reports held when the object is the lock whose ID is id, nil, nil when
// there is none, and otherwise an error: a *LockHeldError when another
// lock holds it or when an object is there but cannot be read, the read
// error when there is no telling.
func (c *Client) lockHolder(ctx context.Context, workspace, key, id string) (held bool, err error) {
	holder, err := c.ReadLock(ctx, workspace)
	switch {
	case errors.Is(err, ErrChecksumMissing), errors.Is(err, ErrChecksumMismatch), errors.Is(err, ErrInvalidLock):
		return false, &LockHeldError{Bucket: c.bucket, Key: key, Err: err}
	case err != nil:
		return false, err
	case holder == nil:
		return false, nil
	case holder.ID == id:
		return true, nil
	}
	return false, &LockHeldError{Bucket: c.bucket, Key: key, Holder: holder}
}
