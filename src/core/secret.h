/* core/secret.h - BMC credentials at rest and at the point of use.
 *
 * The store holds each node's spec.bmc.password sealed with one 32-byte key kept in
 * <data-dir>/secret.key (mode 0600, created at serve's first start): libsodium's secretbox
 * (XSalsa20-Poly1305, crypto_secretbox_easy; https://doc.libsodium.org/secret-key_cryptography/
 * secretbox) with a random 24-byte nonce per seal. The sealed text is
 * "sb1:" + base64 (RFC 4648 section 4, padded) of nonce || ciphertext-with-MAC, and it lives in
 * the stored node document under spec.bmc.password_sealed. There is no process-wide key: the
 * key is a handle serve loads and hands explicitly to whoever seals or opens (the API seals an
 * enrolled or PUT password with secret_bmc_seal before the node is written; the lifecycle opens
 * it with secret_bmc_password inside the BMC step). core/codec.c neither seals nor opens: a
 * decoded node carries only the sealed text (node_bmc.password_sealed), so the informer cache,
 * node_dup copies and every scan over nodes never hold a plaintext BMC password. The plaintext
 * key "password" is written only by a writer with no key (tools, tests of other modules) or
 * read back from an older store.
 *
 * spec.bmc.password_file names a file inside serve's --bmc-credentials-dir (a plain file name,
 * never a path): secret_bmc_password resolves the password a BMC call should use, from the
 * spec or from that file, at the moment of the call. spec.bmc.ca_file (a Redfish CA bundle)
 * names a file in the same directory, by the same rule (secret_bmc_ca_path).
 *
 * Key material lives in sodium_malloc'd memory (guard pages, mlock'd where allowed) and is wiped
 * with sodium_memzero when freed. Nothing here ever puts a password or key byte into err. */
#ifndef FP_CORE_SECRET_H
#define FP_CORE_SECRET_H

#include <stddef.h>

#include "core/model.h"

#define SECRET_KEY_BYTES 32 /* crypto_secretbox_KEYBYTES */
#define SECRET_SEALED_PREFIX "sb1:"
#define SECRET_MAX_PLAIN 1024    /* longest password sealed or read from a password file */
#define SECRET_FILE_NAME_MAX 128 /* longest spec.bmc.password_file */

struct secret_key;

/* secret_key_load_or_create reads the key from path, or creates it when path does not exist:
 * 32 bytes from randombytes_buf written with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, fsync'd.
 * An existing file must be a regular file (not a symlink) owned by this user, with no
 * group/other permission bits, and exactly 32 bytes long; otherwise FP_EPERM (ownership or
 * mode) or FP_EINVAL (size, type) with the path and the fix in err, e.g.
 * "<path> is readable or writable by group or others (mode 0644); run chmod 600 <path>".
 * FP_EIO for other I/O errors (with strerror). *created is set to 1 when this call created the
 * file (may be NULL). On success *out is owned by the caller (secret_key_free). */
int secret_key_load_or_create(const char *path, struct secret_key **out, int *created, char *err,
			      size_t errlen);

/* secret_key_from_bytes copies len == SECRET_KEY_BYTES bytes into a new key (tests, tools).
 * Returns NULL for any other len. Owned by the caller. */
struct secret_key *secret_key_from_bytes(const unsigned char *bytes, size_t len);

/* secret_key_free wipes and frees the key. NULL is a no-op. */
void secret_key_free(struct secret_key *k);

/* secret_seal seals the NUL-terminated plain (at most SECRET_MAX_PLAIN bytes, FP_ETOOBIG
 * otherwise) under k with a fresh random nonce and stores the "sb1:..." text in *out (a new
 * string the caller frees; it is not secret). Returns 0, FP_ETOOBIG or FP_EINVAL (NULL k). */
int secret_seal(const struct secret_key *k, const char *plain, char **out, char *err,
		size_t errlen);

/* secret_open opens a text made by secret_seal. On success *out is the plaintext, a new string
 * the caller frees with fp_free_secret. Errors (err never holds plaintext):
 * FP_EPARSE for a text without the "sb1:" prefix, with bad base64, or too short/long to hold a
 * nonce and a MAC; FP_EAUTH when the MAC does not verify (another key, or the text was altered)
 * or the plaintext holds a NUL byte. */
int secret_open(const struct secret_key *k, const char *sealed, char **out, char *err,
		size_t errlen);

/* secret_bmc_seal seals b->password (a plaintext password a client just sent) under k before
 * the node is written: b->password_sealed becomes the new "sb1:" text (any older one is freed)
 * and b->password is wiped (explicit_bzero) and freed, so the node in memory and in the store
 * holds only the sealed text. No-op returning 0 when b->password is NULL or k is NULL (a writer
 * without a key, such as a tool or a unit test of another module, stores the plaintext, as
 * before). Errors: FP_ETOOBIG for a password over SECRET_MAX_PLAIN bytes (b unchanged; the
 * codec bounds passwords far below that). */
int secret_bmc_seal(const struct secret_key *k, struct node_bmc *b, char *err, size_t errlen);

/* secret_file_name_validate checks a value that names a file in serve's credentials
 * directory (spec.bmc.password_file, spec.bmc.ca_file): 1..128 characters of [A-Za-z0-9._-],
 * not starting with '.', so it can only name a file directly inside that directory. Returns 0
 * or FP_EINVAL with "<field>: ..." in err (field is borrowed, e.g. "spec.bmc.ca_file"). */
int secret_file_name_validate(const char *field, const char *name, char *err, size_t errlen);
/* secret_password_file_validate is secret_file_name_validate for spec.bmc.password_file. */
int secret_password_file_validate(const char *name, char *err, size_t errlen);

/* secret_bmc_ca_path resolves spec.bmc.ca_file (a file name, see secret_file_name_validate) to
 * the absolute path the Redfish driver hands to libcurl (CURLOPT_CAINFO): cred_dir/<ca_file>,
 * written into path (pathlen bytes, caller's buffer). cred_dir must be absolute (serve makes
 * --bmc-credentials-dir absolute at start). The file is checked with lstat at the moment of
 * the call: a regular file (a symlink is refused, so nothing outside the directory can be
 * named through it) of at most SECRET_CA_MAX bytes. The CA bundle is not secret; it is kept in
 * the credentials directory so no API client can make serve open an arbitrary server file.
 * Returns 0 with path = "" when b->ca_file is NULL (the system's CA store is used), 0 with the
 * path, or, with path = "" and the path (never content) in err: FP_EINVAL for a bad name, a
 * NULL or relative cred_dir or a non-regular file, FP_ENOTFOUND when the file does not exist,
 * FP_EPERM for a symlink or a directory this process cannot search, FP_ETOOBIG for a file over
 * SECRET_CA_MAX bytes or a path longer than pathlen - 1, FP_EIO for other stat errors. */
#define SECRET_CA_MAX (4 * 1024 * 1024)
int secret_bmc_ca_path(const struct node_bmc *b, const char *cred_dir, char *path, size_t pathlen,
		       char *err, size_t errlen);

/* secret_bmc_password resolves the password a BMC call uses for b, at the moment of the call
 * (the caller wipes and frees it with fp_free_secret right after the call):
 *   - b->password when set (a plaintext password from an older store or a keyless writer);
 *   - else, when b->password_file is set, the content of cred_dir/<password_file>: opened with
 *     O_NOFOLLOW (a symlink is refused), a regular file owned by this process's effective user,
 *     at most SECRET_MAX_PLAIN bytes, no NUL byte, one trailing "\n" or "\r\n" stripped;
 *   - else, when b->password_sealed is set, that text opened with k (borrowed; serve's key).
 *     FP_EAUTH "cannot decrypt the BMC password (was secret.key replaced?)" when k is NULL or
 *     does not open it (another key, an altered or malformed text);
 *   - else no password: *out = NULL and 0 (the sim driver needs none).
 * On success *out is a new string the caller frees with fp_free_secret (or NULL as above).
 * Errors, with the file's path (never its content) in err: FP_EINVAL for a bad file name or a
 * NULL/empty cred_dir, FP_ENOTFOUND when the file does not exist, FP_EPERM for a symlink, a
 * file owned by another user or not readable, FP_EINVAL for a non-regular file or a NUL byte,
 * FP_ETOOBIG for a file over SECRET_MAX_PLAIN bytes, FP_EIO for other read errors. */
int secret_bmc_password(const struct secret_key *k, const struct node_bmc *b, const char *cred_dir,
			char **out, char *err, size_t errlen);

/* secret_boot_token writes into out (outlen >= SECRET_BOOT_TOKEN_LEN + 1) the network-boot
 * callback token of one provisioning attempt: base64url without padding (RFC 4648 section 5) of
 * HMAC-SHA-256 (RFC 2104; libsodium crypto_auth_hmacsha256) under a key derived from k for this
 * purpose only (crypto_generichash keyed with k over "fleetplane-boot-token-v1"), over
 * node || 0x00 || op_id. The token is never stored: the boot service recomputes it for the
 * node's operation in flight, so a callback from an earlier attempt (another op_id) or another
 * node does not match. Returns 0, or FP_EINVAL (NULL argument, outlen too small). */
#define SECRET_BOOT_TOKEN_LEN 43
int secret_boot_token(const struct secret_key *k, const char *node, const char *op_id, char *out,
		      size_t outlen);

/* secret_token_equal compares two NUL-terminated tokens in time independent of where they
 * differ (sodium_memcmp over equal lengths). Returns 1 when equal. */
int secret_token_equal(const char *a, const char *b);

#endif
