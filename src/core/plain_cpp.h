// Included first by every src/core header: src/core is plain C++ and is
// unit-tested without a server, so it must never see PostgreSQL's headers
// (their macros and longjmp-based errors do not mix with its exceptions).
// No include guard on purpose: the check runs at every inclusion.
#ifdef POSTGRES_H
#error "src/core is plain C++ and must not see PostgreSQL headers"
#endif
