/* The C baseline for the AF_ALG path: AES-128-CBC encrypt through one driver, one op per call.
 *
 * Usage: afalg_speed DRIVER SIZE SECONDS
 * Prints: DRIVER SIZE OPS SECONDS (wall, one line), so a script can compare it with Python.
 * Same path as the engine: one bound transform, one operation socket, sendmsg with the IV and
 * operation as control messages, then read the result.
 */
#include <linux/if_alg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SOL_ALG
#define SOL_ALG 279
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DRIVER SIZE SECONDS\n", argv[0]);
        return 2;
    }
    const char *driver = argv[1];
    size_t size = strtoul(argv[2], NULL, 10);
    double seconds = atof(argv[3]);
    struct sockaddr_alg sa = {.salg_family = AF_ALG, .salg_type = "skcipher"};
    strncpy((char *)sa.salg_name, driver, sizeof(sa.salg_name) - 1);
    int tfm = socket(AF_ALG, SOCK_SEQPACKET, 0);
    if (tfm < 0 || bind(tfm, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("bind");
        return 1;
    }
    unsigned char key[16] = {0};
    if (setsockopt(tfm, SOL_ALG, ALG_SET_KEY, key, sizeof(key)) < 0) {
        perror("setsockopt");
        return 1;
    }
    int op = accept(tfm, NULL, 0);
    if (op < 0) {
        perror("accept");
        return 1;
    }
    unsigned char *in = calloc(1, size), *out = malloc(size);
    char cbuf[CMSG_SPACE(sizeof(__u32)) + CMSG_SPACE(sizeof(struct af_alg_iv) + 16)];
    long ops = 0;
    double start = now(), end = start;
    while (end - start < seconds) {
        memset(cbuf, 0, sizeof(cbuf));
        struct iovec iov = {.iov_base = in, .iov_len = size};
        struct msghdr msg = {.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
                             .msg_iov = &iov, .msg_iovlen = 1};
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_ALG;
        c->cmsg_type = ALG_SET_OP;
        c->cmsg_len = CMSG_LEN(sizeof(__u32));
        *(__u32 *)CMSG_DATA(c) = ALG_OP_ENCRYPT;
        c = CMSG_NXTHDR(&msg, c);
        c->cmsg_level = SOL_ALG;
        c->cmsg_type = ALG_SET_IV;
        c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + 16);
        struct af_alg_iv *iv = (struct af_alg_iv *)CMSG_DATA(c);
        iv->ivlen = 16;
        memset(iv->iv, 0, 16);
        if (sendmsg(op, &msg, 0) != (ssize_t)size) {
            perror("sendmsg");
            return 1;
        }
        size_t got = 0;
        while (got < size) {
            ssize_t n = read(op, out + got, size - got);
            if (n <= 0) {
                perror("read");
                return 1;
            }
            got += n;
        }
        ops++;
        end = now();
    }
    printf("%s %zu %ld %.6f\n", driver, size, ops, end - start);
    return 0;
}
