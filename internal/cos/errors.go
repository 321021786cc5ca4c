package cos

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/tencentyun/cos-go-sdk-v5"
)

// Sentinel errors. Test for them with errors.Is; the errors returned wrap
// them together with the details.
var (
	// ErrInvalidConfig is wrapped by errors about a Config (or a workspace
	// name) that no request could fix.
	ErrInvalidConfig = errors.New("invalid COS configuration")
	// ErrBucketNotFound means COS answered that the bucket does not exist:
	// NoSuchBucket, or any 404 to the bucket listing (as Terraform reads it).
	ErrBucketNotFound = errors.New("COS bucket does not exist")
	// ErrAccessDenied means COS refused the credentials or the request: any
	// 403, or the codes AccessDenied, InvalidAccessKeyId and
	// SignatureDoesNotMatch. A 403 that says the store is full (Ceph RGW's
	// QuotaExceeded) is ErrStoreFull instead: no answer matches both.
	ErrAccessDenied = errors.New("COS access denied")
	// ErrStoreFull means the store refuses new objects because the bucket
	// is full or over its quota: a 507 Insufficient Storage, or the codes
	// stores send for it whatever the status: QuotaExceeded (Ceph RGW, a
	// 403), XMinioStorageFull (MinIO, a 507),
	// XMinioAdminBucketQuotaExceeded (MinIO's bucket quota, a 400) and
	// InsufficientStorage. EntityTooLarge is not: it refuses one object's
	// size, not the bucket's fill.
	//
	// A full store fails at once: the SDK never retries PutObject's
	// request, whose body is a stream it cannot send twice. A 507 to a
	// request without a body (a listing, a read, a delete) is retried as
	// the SDK retries every 5xx: three attempts in all, without a wait.
	ErrStoreFull = errors.New("the bucket refuses new objects: it is full or over its quota")
	// ErrUnreachable means no answer came back: a network error, a refused
	// connection or a timeout (the HTTP client's or the context deadline).
	ErrUnreachable = errors.New("COS endpoint unreachable")
	// ErrChecksumMissing means the object has no usable x-cos-meta-md5
	// (missing, or not 32 characters): Terraform refuses to read it.
	ErrChecksumMissing = errors.New("object has no valid x-cos-meta-md5 checksum")
	// ErrChecksumMismatch means the hex MD5 of the body differs from the
	// object's x-cos-meta-md5: Terraform refuses to read it.
	ErrChecksumMismatch = errors.New("object body does not match its x-cos-meta-md5 checksum")
	// ErrStateTooLarge means the state object is larger than
	// Config.MaxStateBytes.
	ErrStateTooLarge = errors.New("state object too large")
	// ErrInvalidLock means the .tflock object exists but its body is not
	// Terraform's LockInfo JSON.
	ErrInvalidLock = errors.New("unreadable lock object")
	// ErrRedirect means COS answered with a redirect (any 3xx) that was
	// not followed: one to another scheme or host never is, since it would
	// carry the signed request and the security token there. The error
	// does not quote the redirect's target.
	ErrRedirect = errors.New("COS answered with a redirect, which is not followed")
)

// ResponseError is an error answer from COS. It matches ErrBucketNotFound,
// ErrAccessDenied, ErrStoreFull and ErrRedirect as documented on them. Its fields are
// scrubbed of the Client's credentials and of request signatures; a
// redirect keeps neither Code nor Message, which could repeat its target.
type ResponseError struct {
	// Op describes the operation, such as `read object "env/terraform.tfstate"`.
	Op string
	// Bucket is the bucket addressed.
	Bucket string
	// Key is the object key, "" for bucket operations.
	Key string
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the COS error code (NoSuchBucket, AccessDenied, ...), "" when
	// the body carried none.
	Code string
	// Message is COS's error message.
	Message string
	// RequestID is the x-cos-request-id of the answer, for support tickets.
	RequestID string
}

// Error implements error.
func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("%s in bucket %q: COS answered %d %s", e.Op, e.Bucket, e.StatusCode, http.StatusText(e.StatusCode))
	if isRedirect(e.StatusCode) {
		msg += ": a redirect, which is not followed"
	}
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RequestID != "" {
		msg += " (request id " + e.RequestID + ")"
	}
	return msg
}

// Is reports whether the answer means ErrBucketNotFound, ErrAccessDenied,
// ErrStoreFull or ErrRedirect.
func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrRedirect:
		return isRedirect(e.StatusCode)
	case ErrBucketNotFound:
		return e.Code == "NoSuchBucket" || (e.Key == "" && e.StatusCode == http.StatusNotFound)
	case ErrStoreFull:
		return e.storeFull()
	case ErrAccessDenied:
		if e.storeFull() {
			return false // Ceph RGW's QuotaExceeded is a 403
		}
		switch e.Code {
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
			return true
		}
		return e.StatusCode == http.StatusForbidden
	}
	return false
}

// storeFullCodes are the error codes with which object stores refuse a
// write because the bucket is full or over its quota (see ErrStoreFull).
var storeFullCodes = map[string]bool{
	"QuotaExceeded":                  true, // Ceph RGW, 403
	"XMinioStorageFull":              true, // MinIO, 507
	"XMinioAdminBucketQuotaExceeded": true, // MinIO's bucket quota, 400
	"InsufficientStorage":            true, // costest.Server.SetQuota, 507
}

// storeFull reports whether the answer means ErrStoreFull.
func (e *ResponseError) storeFull() bool {
	return e.StatusCode == http.StatusInsufficientStorage || storeFullCodes[e.Code]
}

// classify turns what the SDK returned for op into one of this package's
// errors. resp is the SDK's response, nil when no answer came back.
func (c *Client) classify(op, key string, resp *sdk.Response, err error) error {
	var er *sdk.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		// Built from the answer's fields, never from er.Error(), which
		// quotes the request URL.
		id := er.RequestID
		if id == "" {
			id = er.Response.Header.Get("X-Cos-Request-Id")
		}
		re := &ResponseError{
			Op: op, Bucket: c.bucket, Key: key, StatusCode: er.Response.StatusCode,
			Code: c.redact.scrub(er.Code), Message: c.redact.scrub(er.Message), RequestID: c.redact.scrub(id),
		}
		if isRedirect(re.StatusCode) {
			re.Code, re.Message = "", ""
		}
		return re
	}
	where := fmt.Sprintf("%s in bucket %q", op, c.bucket)
	attempts, last := lastError(err)
	if attempts > 1 {
		where += fmt.Sprintf(" (%d attempts)", attempts)
	}
	if resp != nil {
		// An answer came, but the SDK could not use it (a listing that
		// is not XML, for example).
		return fmt.Errorf("%s: unreadable answer (%d): %w", where, resp.StatusCode, withoutURL(last))
	}
	return transportError(where, last)
}

// isRedirect reports whether status is a redirect.
func isRedirect(status int) bool { return status >= 300 && status < 400 }

// transportError wraps an error met while no answer (or no complete
// answer) came back. A cancelled context is reported as such; everything
// else, deadlines included, is ErrUnreachable. The request URL net/http
// quotes is left out of the message (see withoutURL).
func transportError(where string, err error) error {
	err = withoutURL(err)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", where, err)
	}
	return fmt.Errorf("%s: %w: %w", where, ErrUnreachable, err)
}

// lastError unwraps the SDK's *RetryError, which holds one error per
// attempt and no Unwrap method, into the attempt count and the last error.
func lastError(err error) (int, error) {
	if re, ok := errors.AsType[*sdk.RetryError](err); ok && len(re.Errs) > 0 {
		return len(re.Errs), re.Errs[len(re.Errs)-1]
	}
	return 1, err
}
