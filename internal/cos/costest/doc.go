// Package costest is a Tencent Cloud COS protocol server for tests. COS
// cannot be reached offline; tests point internal/cos (or the COS SDK
// itself) at a Server instead.
//
// The server checks what the real service checks on the requests the
// operator makes:
//
//   - Request signing: the Authorization header the SDK computes
//     (q-sign-algorithm=sha1, q-ak, q-sign-time, q-key-time, q-header-list,
//     q-url-param-list, q-signature) is verified against the server's own
//     copy of the secret key, recomputing HttpString, StringToSign, SignKey
//     and the HMAC-SHA1 signature as COS documents them. A missing header is
//     403 AccessDenied, an unknown q-ak 403 InvalidAccessKeyId, a wrong
//     signature 403 SignatureDoesNotMatch, an expired key time 403
//     AccessDenied, a key time in the future 403 RequestTimeTooSkewed. For
//     temporary credentials the x-cos-security-token header must carry
//     their token.
//   - Buckets: a request to an unknown bucket is 404 NoSuchBucket.
//   - Objects: GET Bucket (prefix, delimiter, marker, max-keys), HEAD
//     Bucket, and GET, HEAD, PUT and DELETE Object with x-cos-meta-*
//     metadata, ETag and x-cos-hash-crc64ecma. A PUT Object carrying
//     x-cos-forbid-overwrite: true to a key that exists is refused with 409
//     FileAlreadyExists and leaves the object as it was, as COS does on a
//     bucket without versioning (the operator's lock writes rely on it).
//     Errors are COS's XML <Error> documents with Code, Message, Resource
//     and RequestId.
//
// A test can make the server refuse: DenyAccess answers every request to
// a bucket 403 AccessDenied, DenyWrites only its PUT and DELETE requests,
// SetQuota answers a PUT Object that would take the bucket above a number
// of bytes 507 InsufficientStorage (what a full store answers), FailNext
// answers the next requests with an error status, and Close makes the
// server unreachable.
//
// # Addressing buckets
//
// The SDK resolves every request path against its BucketURL and drops any
// path the base URL had, so a bucket cannot be named in the base URL's
// path. Server.URL(bucket) therefore gives each bucket its own loopback
// listener (started on first use; an unknown bucket's listener answers
// NoSuchBucket), all served by the same Server and sharing credentials,
// faults and counters:
//
//	client, err := cos.New(cfg, cos.WithBaseURL(srv.URL(cfg.Bucket)))
//
// The server's main listener routes by Host header instead, as COS does:
// <bucket>.cos.<region>.myqcloud.com, <bucket>.cos.accelerate.myqcloud.com
// and <bucket>.cos-internal.<region>.tencentcos.cn. Server.HTTPClient
// returns a client that dials that listener whatever the URL's host, so a
// client built from a real (plain http) bucket URL reaches the server;
// Server.DialContext is its dial function, for clients that take one
// (cos.WithDialContext).
//
// Server.RequestLog records what the server saw of each request, including
// its q-signature, so that tests can check that no error repeats it.
package costest
