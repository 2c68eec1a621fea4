"""An application that knows nothing of cryptoffload: an HTTPS server (http.server over ssl) and
a client fetching from it with urllib, both stdlib only. Prints the body it got and its size."""

import http.server
import ssl
import sys
import threading
import urllib.request

CERT, KEY, SIZE = sys.argv[1], sys.argv[2], int(sys.argv[3])
BODY = bytes(range(256)) * (SIZE // 256)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_context.load_cert_chain(CERT, KEY)
server.socket = server_context.wrap_socket(server.socket, server_side=True)
threading.Thread(target=server.serve_forever, daemon=True).start()

client_context = ssl.create_default_context(cafile=CERT)
url = f"https://localhost:{server.server_address[1]}/"
with urllib.request.urlopen(url, context=client_context) as response:
    body = response.read()
server.shutdown()
server.server_close()
print("intact" if body == BODY else "CORRUPT", len(body))
