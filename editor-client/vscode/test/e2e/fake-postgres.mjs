// A stand-in PostgreSQL server for run.sh: it records each connection in a file (the argument), asks the client
// for its password in clear text as any server may, records the password it was sent, and hangs up. A workspace's
// .vscode/settings.json names it as a session store: the extension must never connect to it.
import * as net from 'node:net';
import * as fs from 'node:fs';
const [mark, portFile] = process.argv.slice(2);
const srv = net.createServer((sock) => {
  fs.appendFileSync(mark, 'connected\n');
  let buf = Buffer.alloc(0);
  let started = false;
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      if (!started) {
        if (buf.length < 8) return;
        const len = buf.readInt32BE(0);
        if (buf.length < len) return;
        const code = buf.readInt32BE(4);
        buf = buf.subarray(len);
        if (code === 80877103 || code === 80877104) { sock.write('N'); continue; }
        started = true;
        const auth = Buffer.alloc(9); auth.write('R', 0); auth.writeInt32BE(8, 1); auth.writeInt32BE(3, 5);
        sock.write(auth);
        continue;
      }
      if (buf.length < 5) return;
      const len = buf.readInt32BE(1);
      if (buf.length < len + 1) return;
      if (buf[0] === 0x70) fs.appendFileSync(mark, `password ${buf.subarray(5, len).toString().replace(/\0$/, '')}\n`);
      buf = buf.subarray(len + 1);
      sock.destroy();
      return;
    }
  });
  sock.on('error', () => undefined);
});
srv.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(srv.address().port)));
