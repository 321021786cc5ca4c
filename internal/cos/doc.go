// Package cos reads Terraform remote state kept in Tencent Cloud Object
// Storage (COS) the way Terraform's "cos" backend does: the operator uses
// it to check that a CosBackend's bucket answers, to read the state object
// of a workspace and to see who holds its lock.
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
//   - Reading (ReadState, ReadLock): an object must carry x-cos-meta-md5, the
//     hex MD5 of its body, and the body must match it. The lock ID Terraform
//     reports for COS, and that terraform force-unlock expects, is that
//     checksum of the .tflock object.
//
// Requests go through github.com/tencentyun/cos-go-sdk-v5 with
// cos.AuthorizationTransport signing them, as Terraform does. Errors are
// classified into sentinels (ErrBucketNotFound, ErrAccessDenied,
// ErrUnreachable, ErrChecksumMissing, ...) usable with errors.Is; an error
// answer from COS is a *ResponseError. No error message carries a secret
// key, a security token or a request signature.
//
// The package never writes to COS. Tests point a Client at the protocol
// server in the costest subpackage with WithBaseURL.
package cos
