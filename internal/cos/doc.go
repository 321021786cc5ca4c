// Package cos reads Terraform remote state kept in Tencent Cloud Object
// Storage (COS) the way Terraform's "cos" backend does: the operator uses
// it to check that a CosBackend's bucket answers, to read the state object
// of a workspace, to see who holds its lock, and to take and release that
// lock.
//
// What it mirrors from Terraform (internal/backend/remote-state/cos):
//
//   - The bucket URL (BucketURL): https://<bucket>.cos.<region>.myqcloud.com,
//     or https://<bucket>.cos.accelerate.myqcloud.com with Accelerate, or,
//     when Endpoint is set, <scheme>://<bucket>.cos-internal.<region>.tencentcos.cn
//     with the scheme and region taken from the endpoint.
//   - The key layout (StateKey, LockKey): path.Join(prefix, key) for the
//     "default" workspace, path.Join(prefix, workspace, key) otherwise, and
//     the lock object at the state key plus ".tflock".
//   - The bucket check (CheckBucket): list objects under the prefix.
//   - Reading (StreamState, ReadLock): an object must carry
//     x-cos-meta-md5, the hex MD5 of its body, and the body must match it.
//     The lock ID Terraform reports for COS, and that terraform
//     force-unlock expects, is that checksum of the .tflock object.
//   - Locking (AcquireLock, ReleaseLock): the .tflock object holds the
//     LockInfo JSON with Path set to its own key, written with its
//     x-cos-meta-md5 after checking that there is none, and deleted after
//     checking its ID. Terraform's tag-service mutex around those steps is
//     not used; AcquireLock's write carries x-cos-forbid-overwrite instead.
//
// Where it is stricter than Terraform, because the configuration comes
// from tenants who may be careless or hostile:
//
//   - Prefix and key must not contain ".." segments, and a workspace name
//     must not be or contain "." or "..": path.Join would resolve them to
//     objects outside the prefix (or onto another workspace's state).
//   - An http:// Endpoint, which sends the security token and the state in
//     clear text, needs Config.AllowHTTPEndpoint.
//   - A redirect to another scheme or host is never followed (it would
//     carry the signed request and the token there): it is ErrRedirect.
//   - Memory is bounded by configuration, not by the state: StreamState
//     hands the body to the caller as it arrives, checks its size against
//     Config.MaxStateBytes and its MD5 while it streams, and makes the
//     reader fail at the end of a body that does not match. It is the only
//     way the package reads a state: nothing returns a whole state object.
//     The operator's consumers are statefile's streaming walker
//     (statefile.ReadSummary for the CosBackend probe, outputs.Read for a
//     RemoteState), so a state of millions of outputs costs a read buffer,
//     not memory in proportion to it. Only a .tflock object, bounded to
//     1 MiB, is read whole, by ReadLock.
//
// Requests go through github.com/tencentyun/cos-go-sdk-v5 with
// cos.AuthorizationTransport signing them, as Terraform does. WithDialContext
// lets the operator decide, at connection time, which addresses a Client
// may connect to; WithHTTPClient replaces the transport altogether (the two
// exclude each other).
//
// Errors are classified into sentinels (ErrBucketNotFound,
// ErrAccessDenied, ErrUnreachable, ErrChecksumMissing, ErrRedirect, ...)
// usable with errors.Is; an error answer from COS is a *ResponseError. No
// error message carries the secret key, the security token or a request
// signature, whatever the SDK, net/http or the server put in it: messages
// are scrubbed of the Client's credentials, of signing parameters
// (q-signature, q-ak, x-cos-security-token) and of anything shaped like a
// signature, and leave out the request URLs net/http quotes.
//
// The package writes to COS to take a lock (AcquireLock creates the
// .tflock object for a StateLock), to release one (ReleaseLock deletes
// the .tflock object a forceUnlock or a StateLock names), to keep copies
// of states under keys of the caller's (PutObject, DeleteObject), and to
// write a workspace's state back (WriteState, as Terraform writes it,
// streamed: for a restore, which holds the lock meanwhile). A lock
// already held is a *LockHeldError naming the holder.
// Tests point a Client at the protocol server in the costest subpackage
// with WithBaseURL, or route its connections there with
// WithDialContext(srv.DialContext); tests and demos that run the manager
// point every Client at a protocol server that routes by Host header, as
// COS does, with WithServiceURL.
package cos
