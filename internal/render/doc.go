// Package render turns HttpBackend and CosBackend specs into what a runner
// pod needs to run `terraform init`: the backend configuration files (kept in
// a ConfigMap) and the credentials as environment variables (kept in a
// Secret, for envFrom).
//
// Three files are rendered for each backend, all carrying the same settings:
//
//   - backend.tf: `terraform { backend "<type>" { ... } }` in HCL, for a
//     working directory that holds it;
//   - backend.tf.json: the same in Terraform's JSON syntax;
//   - backend.tfbackend: the settings at top level, for
//     `terraform init -backend-config=backend.tfbackend` next to an empty
//     `terraform { backend "<type>" {} }` block.
//
// A runner mounts only the file it uses (a ConfigMap item, or subPath) into
// its root module: backend.tf and backend.tf.json side by side are a
// "Duplicate backend configuration" for terraform validate, plan and apply.
//
// The three files mean the same to Terraform, which decodes a backend
// block against the backend's schema: in JSON it reads an object as a
// nested block where the schema declares one (and null or [] as no block),
// while in HCL `name = value` is always an attribute and `name { ... }` a
// block. An override naming a nested block (the cos backend's assume_role,
// or a block an earlier dotted path created) therefore takes an object,
// whose members become attributes of the block in every file, and any
// other value is refused with [ErrInvalidOverride]. Elsewhere an object is
// an attribute value in every file. The tests run terraform init on the
// three files for every kind of override value and expect one verdict.
//
// Only the attributes a user set are written, plus the required ones; a value
// equal to Terraform's own default counts as unset (the API server fills in
// defaults, so the two cannot be told apart). Credentials never appear in
// the files: [HTTPCredentials] and [CosCredentials] map them to the
// environment variables Terraform reads.
//
// Values cannot escape their strings: HCL is written with hclwrite, which
// escapes quotes, control characters and the template introducers "${" and
// "%{"; JSON is written with encoding/json. Terraform decodes backend blocks
// without an evaluation context, so it reads JSON strings verbatim (no
// template interpolation) and the JSON file carries values unescaped.
//
// # Limits
//
// Specs come from tenants who may be hostile, and an override value is
// arbitrary JSON that every file writes with indentation, so rendering it
// unchecked costs time and memory that grow with the square of its nesting
// depth. Before any override is decoded, a streaming scan of its raw JSON
// ([jsonbounds.Measure]) checks these limits, which the API's admission
// rules enforce too:
//
//   - a value is a JSON scalar (string, number, bool or null), or a list or
//     an object whose members are all scalars ([MaxOverrideDepth]);
//   - a string holds at most [MaxOverrideStringBytes] (4096) bytes, a list
//     or object at most [MaxOverrideMembers] (64) members, an object key at
//     most [MaxOverrideKeyBytes] (128) bytes;
//   - a number literal is at most [MaxOverrideNumberBytes] (32) bytes long,
//     and a number is 0 or of a magnitude at least 1e-32 and less than
//     1e32 ([MaxOverrideNumberExponent]): numbers are written in plain
//     decimal, in at most 66 characters;
//   - the values of one spec total at most [MaxOverrideValuesBytes]
//     (32 KiB), counting the bytes of strings and object keys and 8 for
//     any other scalar, as the admission policy counts them;
//   - as the API already requires, a spec has at most 32 overrides and a
//     path at most 128 bytes.
//
// A value beyond them is refused with [ErrInvalidOverride], naming the
// path but never quoting the value. Within them, rendering costs time and
// memory linear in the size of the spec. The files may still be too large
// for a ConfigMap ([MaxConfigMapDataBytes], 1 MiB of keys and values):
// [HTTPFiles] and [CosFiles] then fail with [ErrRenderTooLarge], and
// [Files.CheckDataSize] makes the same check for files built otherwise,
// before the ConfigMap is built. Both are errors in the spec, for the user
// to fix: a stall, not a failure to retry.
//
// Every function is pure and deterministic: the same inputs give
// byte-identical files and equal objects, so a resync writes nothing.
package render
