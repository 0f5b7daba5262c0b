/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack profiles (docs/design.md D16): the known multi-process serving
 * stacks as data, profiles/stacks/NAME.ini (parsed with inih): the process
 * roles a request passes in order, the ZMQ sockets between them, and how
 * request ids appear. Message hops (msg_hops.h) name a chain's processes
 * with the roles of the profile whose role count and id patterns fit it.
 *
 * Format:
 *   [stack]
 *   name      = sglang
 *   role      = tokenizer_manager  ; repeated, 2 .. STACK_ROLES, in request order:
 *   role      = scheduler          ; the first serves the client, the second
 *   role      = detokenizer        ; reads its request message and runs the steps
 *   socket    = push>pull          ; repeated, one per role: the hop from it to the
 *                                  ; next (the last back to the first); zmq types
 *   transport = ipc tcp            ; ipc | tcp, any of them
 *   id        = <hex32>            ; repeated, up to STACK_IDS: PREFIX<hex32>, an id
 *                                  ; is PREFIX then 32 hex digits (uuid4().hex),
 *                                  ; then anything (vLLM's -N suffix)
 *   id_in     = sse_id zmq_msgpack ; where ids are read: sse_id (the OpenAI chunk
 *                                  ; "id"), zmq_msgpack, zmq_pickle
 */
#ifndef TTFTRACE_STACK_PROFILE_H
#define TTFTRACE_STACK_PROFILE_H

#include <stddef.h>

#define STACK_NAME_BYTES 24	/* names and roles, NUL included */
#define STACK_ROLES 3
#define STACK_IDS 4
#define STACK_PROFILES 8	/* loaded per directory */

struct stack_profile {
	char name[STACK_NAME_BYTES];
	char role[STACK_ROLES][STACK_NAME_BYTES];
	char socket[STACK_ROLES][STACK_NAME_BYTES];	/* "push>pull", ... */
	char id_prefix[STACK_IDS][STACK_NAME_BYTES];	/* before the 32 hex digits; "" none */
	int n_roles, n_sockets, n_ids;
	unsigned int transports;	/* 1 << enum stack_transport */
	unsigned int id_in;		/* 1 << enum stack_id_in */
};

enum stack_transport { STACK_IPC, STACK_TCP };
enum stack_id_in { STACK_SSE_ID, STACK_ZMQ_MSGPACK, STACK_ZMQ_PICKLE };

struct stack_profiles {
	struct stack_profile p[STACK_PROFILES];
	int n;
};

/*
 * Parse profile text (file_name names it in errors). 0, or -EINVAL with
 * "FILE:LINE: what" (or "FILE: what") in err.
 */
int stack_profile__parse_string(const char *text, const char *file_name,
				struct stack_profile *p, char *err, size_t err_sz);
/*
 * Add every .ini file of dir, in name order. 0 (also when dir does not exist),
 * -ENOSPC past STACK_PROFILES, or the first file's error (-EINVAL, -EIO)
 * with err; the files before it stay added.
 */
int stack_profiles__load_dir(struct stack_profiles *sp, const char *dir, char *err,
			     size_t err_sz);
/*
 * The stacks of profiles/stacks/ where ttftrace finds its files, the first
 * of these directories that exists: $TTFTRACE_PROFILE_DIR/stacks,
 * profiles/stacks next to the binary, ../../profiles/stacks from it,
 * ../share/ttftrace/profiles/stacks from it (an installed tree). Errors as
 * stack_profiles__load_dir.
 */
int stack_profiles__load_default(struct stack_profiles *sp, char *err, size_t err_sz);
/* The first profile with n_roles roles and an id pattern id fits; NULL none. */
const struct stack_profile *stack_profiles__match(const struct stack_profiles *sp, int n_roles,
						  const char *id);

#endif /* TTFTRACE_STACK_PROFILE_H */
