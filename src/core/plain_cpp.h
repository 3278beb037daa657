// Included first by every src/core header: src/core is plain C++ and is
// unit-tested without a server, so it must never see PostgreSQL's headers
// (their macros and longjmp-based errors do not mix with its exceptions).
// No include guard on purpose: the check runs at every inclusion.
//
// In src/pg the error means a src/core header came after postgres.h: a glue
// file includes the src/core headers it uses, and those its glue headers
// need, before its first glue header.
#ifdef POSTGRES_H
#error "src/core is plain C++: include it before any src/pg header"
#endif
