/*
 * What libpq itself costs a client per row of a stream, by transport: a server-side cursor
 * read in binary FETCH batches (what Spout does) against COPY ... TO STDOUT (FORMAT binary),
 * over the same query. Each value is touched (its length and last byte summed) so that both
 * read every byte; nothing is written. Prints the client's and the backend's CPU.
 * Benchmark only (docs/benchmarks.md, "COPY as a stream's transport"); not part of Spout.
 *
 *   probe DATABASE_URL fetch|copy [SQL]
 */
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double own_cpu(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

/* utime + stime of a process, from /proc/PID/stat (fields 14 and 15), in seconds. */
static double process_cpu(int pid) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *file = fopen(path, "r");
    if (!file) return -1;
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = 0;
    char *field = strrchr(text, ')');
    long user = 0, system = 0;
    for (int index = 3; field && index <= 15; index++) {
        field = strchr(field + 1, ' ');
        if (index == 14) user = atol(field + 1);
        if (index == 15) system = atol(field + 1);
    }
    return (user + system) / 100.0;
}

static void check(PGconn *connection, PGresult *result, ExecStatusType expected) {
    if (PQresultStatus(result) != expected) {
        fprintf(stderr, "probe: %s", PQerrorMessage(connection));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: probe DATABASE_URL fetch|copy [SQL]\n");
        return 2;
    }
    const char *sql = argc > 3 ? argv[3] : "SELECT emp_no, salary, from_date, to_date FROM salaries ORDER BY emp_no, from_date";
    PGconn *connection = PQconnectdb(argv[1]);
    if (PQstatus(connection) != CONNECTION_OK) {
        fprintf(stderr, "probe: %s", PQerrorMessage(connection));
        return 1;
    }
    int backend = PQbackendPID(connection);
    long long checksum = 0;
    long rows = 0;
    double clientStart = own_cpu(), backendStart = process_cpu(backend);
    char statement[4096];
    if (strcmp(argv[2], "fetch") == 0) {
        PGresult *result = PQexec(connection, "BEGIN READ ONLY");
        check(connection, result, PGRES_COMMAND_OK);
        PQclear(result);
        snprintf(statement, sizeof statement, "DECLARE probe NO SCROLL CURSOR FOR %s", sql);
        result = PQexec(connection, statement);
        check(connection, result, PGRES_COMMAND_OK);
        PQclear(result);
        for (;;) {
            result = PQexecParams(connection, "FETCH 5000 FROM probe", 0, NULL, NULL, NULL, NULL, 1);
            check(connection, result, PGRES_TUPLES_OK);
            int count = PQntuples(result), fields = PQnfields(result);
            for (int row = 0; row < count; row++) {
                for (int field = 0; field < fields; field++) {
                    int length = PQgetlength(result, row, field);
                    if (length > 0) checksum += length + (unsigned char)PQgetvalue(result, row, field)[length - 1];
                }
            }
            rows += count;
            PQclear(result);
            if (count == 0) break;
        }
        PQclear(PQexec(connection, "COMMIT"));
    } else {
        snprintf(statement, sizeof statement, "COPY (%s) TO STDOUT (FORMAT binary)", sql);
        PGresult *result = PQexec(connection, statement);
        check(connection, result, PGRES_COPY_OUT);
        PQclear(result);
        char *buffer;
        int length, first = 1;
        while ((length = PQgetCopyData(connection, &buffer, 0)) > 0) {
            char *cursor = buffer + (first ? 19 : 0); /* the signature, flags and extension length */
            first = 0;
            short fields = (short)ntohs(*(unsigned short *)cursor);
            cursor += 2;
            if (fields >= 0) {
                for (int field = 0; field < fields; field++) {
                    int size = (int)ntohl(*(unsigned int *)cursor);
                    cursor += 4;
                    if (size > 0) {
                        checksum += size + (unsigned char)cursor[size - 1];
                        cursor += size;
                    }
                }
                rows++;
            }
            PQfreemem(buffer);
        }
        PQclear(PQgetResult(connection));
    }
    double client = own_cpu() - clientStart, server = process_cpu(backend) - backendStart;
    printf("%s rows %ld client %.3f s (%.3f us a row) backend %.2f s checksum %lld\n", argv[2], rows, client,
           client / rows * 1e6, server, checksum);
    PQfinish(connection);
    return 0;
}
