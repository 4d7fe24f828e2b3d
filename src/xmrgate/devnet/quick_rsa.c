/* Preloaded into the devnet's monero-wallet-rpc processes only (quick_certificate.py).
 *
 * monero-wallet-rpc 0.18 makes a new self-signed RSA-4096 certificate for its message
 * system's HTTP client (MMS, Bitmessage) each time it creates or opens a wallet: 1-3 s of
 * CPU in OpenSSL's prime search, whatever --daemon-ssl and --rpc-ssl say. The devnet
 * never uses that client. This RSA_generate_key_ex makes the process's first key 2048 bits
 * (the smallest OpenSSL's default security level accepts for a certificate) and gives a
 * copy of that key to every later call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

typedef struct rsa_st RSA;
typedef struct bignum_st BIGNUM;
typedef struct bn_gencb_st BN_GENCB;

/* libcrypto's own declarations, named here so that no OpenSSL headers are needed. */
extern RSA *RSA_new(void);
extern void RSA_free(RSA *);
extern void RSA_get0_key(const RSA *, const BIGNUM **, const BIGNUM **, const BIGNUM **);
extern void RSA_get0_factors(const RSA *, const BIGNUM **, const BIGNUM **);
extern void RSA_get0_crt_params(const RSA *, const BIGNUM **, const BIGNUM **,
                                const BIGNUM **);
extern int RSA_set0_key(RSA *, BIGNUM *, BIGNUM *, BIGNUM *);
extern int RSA_set0_factors(RSA *, BIGNUM *, BIGNUM *);
extern int RSA_set0_crt_params(RSA *, BIGNUM *, BIGNUM *, BIGNUM *);
extern BIGNUM *BN_dup(const BIGNUM *);

typedef int (*keygen_fn)(RSA *, int, BIGNUM *, BN_GENCB *);

#define QUICK_BITS 2048

static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;
static RSA *made; /* the process's key, once made; never freed */

int RSA_generate_key_ex(RSA *rsa, int bits, BIGNUM *e, BN_GENCB *cb) {
  pthread_mutex_lock(&made_lock);
  if (made == NULL) {
    keygen_fn real = (keygen_fn)dlsym(RTLD_NEXT, "RSA_generate_key_ex");
    RSA *fresh = RSA_new();
    if (real != NULL && fresh != NULL && real(fresh, bits < QUICK_BITS ? bits : QUICK_BITS, e, cb) == 1)
      made = fresh;
    else if (fresh != NULL)
      RSA_free(fresh);
  }
  pthread_mutex_unlock(&made_lock);
  if (made == NULL)
    return 0;
  const BIGNUM *n, *pub, *priv, *p, *q, *dmp1, *dmq1, *iqmp;
  RSA_get0_key(made, &n, &pub, &priv);
  RSA_get0_factors(made, &p, &q);
  RSA_get0_crt_params(made, &dmp1, &dmq1, &iqmp);
  return RSA_set0_key(rsa, BN_dup(n), BN_dup(pub), BN_dup(priv)) &&
         RSA_set0_factors(rsa, BN_dup(p), BN_dup(q)) &&
         RSA_set0_crt_params(rsa, BN_dup(dmp1), BN_dup(dmq1), BN_dup(iqmp));
}
