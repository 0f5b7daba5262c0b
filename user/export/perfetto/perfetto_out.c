// SPDX-License-Identifier: GPL-2.0-only
/*
 * Output file and JSON primitives of the Perfetto sink (see perfetto_out.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zlib.h>
#include "user/export/perfetto/perfetto_out.h"

int pf_out__is_gz(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

/* fopencookie hooks: the FILE's buffer drains into gzwrite (zlib's gzip writer). */
static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		unsigned chunk = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
		int w = gzwrite(cookie, buf + done, chunk);

		if (w <= 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int gz_close(void *cookie)
{
	int err = gzclose_w(cookie);

	if (err != Z_OK) {
		errno = err == Z_ERRNO ? errno : EIO;
		return -1;
	}
	return 0;
}

int pf_out__open(struct pf_out *o, const char *path)
{
	struct stat st;
	int in_place, fd, err;

	memset(o, 0, sizeof(*o));
	o->sync_fd = -1;
	o->first = 1;
	o->gz = pf_out__is_gz(path);
	o->path = strdup(path);
	if (!o->path)
		return -ENOMEM;
	/*
	 * A device or FIFO (/dev/null, /dev/stdout) is written in place: renaming
	 * a temporary file over it would replace the device node (as root, in /dev).
	 */
	in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
	if (!in_place && asprintf(&o->tmp_path, "%s.tmp.XXXXXX", path) < 0) {
		o->tmp_path = NULL;
		err = -ENOMEM;
		goto fail;
	}
	fd = in_place ? open(path, O_WRONLY | O_CLOEXEC) : mkostemp(o->tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	if (!in_place) {
		fchmod(fd, 0644);
		o->sync_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	if (o->gz) {
		gzFile gz = gzdopen(fd, "wb1");
		static const cookie_io_functions_t io = { .write = gz_write, .close = gz_close };

		if (!gz) {
			err = -ENOMEM;
			close(fd);
			goto fail_file;
		}
		o->f = fopencookie(gz, "w", io);
		if (!o->f) {
			err = -ENOMEM;
			gzclose_w(gz);
			goto fail_file;
		}
	} else {
		o->f = fdopen(fd, "w");
		if (!o->f) {
			err = -errno;
			close(fd);
			goto fail_file;
		}
	}
	return 0;
fail_file:
	if (o->tmp_path)
		unlink(o->tmp_path);
fail:
	if (o->sync_fd >= 0)
		close(o->sync_fd);
	free(o->path);
	free(o->tmp_path);
	memset(o, 0, sizeof(*o));
	o->sync_fd = -1;
	return err;
}

int pf_out__close(struct pf_out *o)
{
	int err = 0;

	if (fflush(o->f) || ferror(o->f))
		err = -(errno ? errno : EIO);
	if (fclose(o->f) && !err)
		err = -(errno ? errno : EIO);
	o->f = NULL;
	if (o->sync_fd >= 0) {
		if (!err && fsync(o->sync_fd))
			err = -errno;
		close(o->sync_fd);
		o->sync_fd = -1;
	}
	if (o->tmp_path && !err && rename(o->tmp_path, o->path))
		err = -errno;
	if (o->tmp_path && err)
		unlink(o->tmp_path);
	free(o->tmp_path);
	o->tmp_path = NULL;
	return err;
}

void pf_out__abort(struct pf_out *o)
{
	if (o->f) {
		fclose(o->f);
		o->f = NULL;
		if (o->tmp_path)
			unlink(o->tmp_path);	/* never finished: leave no partial file behind */
	}
	if (o->sync_fd >= 0)
		close(o->sync_fd);
	o->sync_fd = -1;
	free(o->path);
	free(o->tmp_path);
	o->path = o->tmp_path = NULL;
}

void pf_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)	/* also keeps the file ASCII for any byte */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void pf_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

void pf_ev(struct pf_out *o, char ph, uint64_t ts_ns, uint32_t pid, uint32_t tid)
{
	fputs(o->first ? "\n" : ",\n", o->f);
	o->first = 0;
	o->events++;
	fprintf(o->f, "{\"ph\":\"%c\",\"ts\":", ph);
	pf_us(o->f, ts_ns);
	fprintf(o->f, ",\"pid\":%u,\"tid\":%u", pid, tid);
}

void pf_name(struct pf_out *o, const char *name, const char *cat)
{
	fputs(",\"name\":", o->f);
	pf_jstr(o->f, name);
	if (cat) {
		fputs(",\"cat\":", o->f);
		pf_jstr(o->f, cat);
	}
}

void pf_complete(struct pf_out *o, uint32_t pid, uint32_t tid, uint64_t start_ns,
		 uint64_t dur_ns, const char *name, const char *cat)
{
	pf_ev(o, 'X', start_ns, pid, tid);
	fputs(",\"dur\":", o->f);
	pf_us(o->f, dur_ns);
	pf_name(o, name, cat);
}

void pf_meta(struct pf_out *o, uint32_t pid, uint32_t tid, const char *what, const char *name)
{
	pf_ev(o, 'M', 0, pid, tid);
	fprintf(o->f, ",\"name\":\"%s\",\"args\":{\"name\":", what);
	pf_jstr(o->f, name);
	fputs("}}", o->f);
}
