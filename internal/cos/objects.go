package cos

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/tencentyun/cos-go-sdk-v5"
)

// The operations on objects other than a backend's state and lock: what a
// state history's destination needs (copies of states, listed, read back
// and pruned). Keys are the caller's: the client checks nothing of them
// but that they are not empty.

// ErrObjectExists is the error of PutObject when an object already has
// the key: a snapshot's key names its content, so the copy is already
// stored.
var ErrObjectExists = errors.New("an object already has this key")

// errNoKey is the error of an operation given no key.
var errNoKey = errors.New("no object key")

// PutObject writes size bytes of body under key, never over an existing
// object (ErrObjectExists then): COS checks the body against md5sum
// (Content-MD5) and refuses it when it differs, and the object carries the
// MD5 in x-cos-meta-md5 as Terraform's state objects do, so that
// StreamObject checks it again when it is read back. body is streamed,
// never held.
func (c *Client) PutObject(ctx context.Context, key string, body io.Reader, size int64, md5sum [16]byte) error {
	if key == "" {
		return errNoKey
	}
	resp, err := c.sdk.Object.Put(ctx, key, io.LimitReader(body, size), &sdk.ObjectPutOptions{
		ACLHeaderOptions: &sdk.ACLHeaderOptions{XCosACL: DefaultACL},
		ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
			ContentLength: size,
			ContentMD5:    base64.StdEncoding.EncodeToString(md5sum[:]),
			XCosMetaXXX:   &http.Header{md5Header: {hex.EncodeToString(md5sum[:])}},
			XOptionHeader: &http.Header{forbidOverwriteHeader: {"true"}},
		},
	})
	if err == nil {
		return nil
	}
	err = c.classify("put object "+strconv.Quote(key), key, resp, err)
	if re, ok := errors.AsType[*ResponseError](err); ok && re.StatusCode == http.StatusConflict {
		return fmt.Errorf("put object %q in bucket %q: %w", key, c.bucket, ErrObjectExists)
	}
	return c.redact.error(err)
}

// ObjectInfo is an object a listing found.
type ObjectInfo struct {
	// Key and Size of the object, and when it was last written.
	Key          string
	Size         int64
	LastModified time.Time
}

// listPage is how many keys one listing request asks for.
const listPage = 1000

// ErrTooManyObjects is the error of ListObjects when the prefix holds more
// objects than its limit.
var ErrTooManyObjects = errors.New("more objects than the limit")

// ListObjects lists the objects whose key starts with prefix, in key
// order, page by page, at most limit of them: more is an error wrapping
// ErrTooManyObjects, so that a prefix someone filled cannot make the
// caller hold an unbounded list.
func (c *Client) ListObjects(ctx context.Context, prefix string, limit int) ([]ObjectInfo, error) {
	var out []ObjectInfo
	marker := ""
	for {
		page, resp, err := c.sdk.Bucket.Get(ctx, &sdk.BucketGetOptions{Prefix: prefix, Marker: marker, MaxKeys: listPage})
		if err != nil {
			return nil, c.redact.error(c.classify("list objects under "+strconv.Quote(prefix), prefix, resp, err))
		}
		for _, o := range page.Contents {
			if len(out) == limit {
				return nil, fmt.Errorf("list objects under %q in bucket %q: %w: %d", prefix, c.bucket, ErrTooManyObjects, limit)
			}
			modified, _ := time.Parse(time.RFC3339, o.LastModified) // a listing without a time sorts first
			out = append(out, ObjectInfo{Key: o.Key, Size: o.Size, LastModified: modified})
		}
		if !page.IsTruncated || len(page.Contents) == 0 {
			return out, nil
		}
		marker = page.NextMarker
		if marker == "" {
			marker = page.Contents[len(page.Contents)-1].Key
		}
	}
}

// DeleteObject deletes the object of key; one already gone is no error.
func (c *Client) DeleteObject(ctx context.Context, key string) error {
	if key == "" {
		return errNoKey
	}
	resp, err := c.sdk.Object.Delete(ctx, key)
	if err == nil || (resp != nil && resp.StatusCode == http.StatusNotFound) {
		return nil
	}
	return c.redact.error(c.classify("delete object "+strconv.Quote(key), key, resp, err))
}

// StreamObject reads the object of key as StreamState reads a state:
// checked against its x-cos-meta-md5 while it streams, at most limit
// bytes (ErrStateTooLarge beyond), found false when there is none.
func (c *Client) StreamObject(ctx context.Context, key string, limit int64, read func(io.Reader) error) (found bool, size int64, err error) {
	if key == "" {
		return false, 0, errNoKey
	}
	_, size, found, err = c.streamObject(ctx, "read object "+strconv.Quote(key), key, limit, ErrStateTooLarge, read)
	return found, size, c.redact.error(err)
}
