#!/usr/bin/env python3
"""Re-verify the published vectors saved under testdata/{wechatpay,alipay}. Needs: pip install cryptography.
Run from any directory:  python3 verify_wechat_alipay.py"""
import base64, json, os
from cryptography.hazmat.primitives import serialization, hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography import x509
T = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
W = os.path.join(T, 'wechatpay'); A = os.path.join(T, 'alipay')
rd = lambda d, f: open(os.path.join(d, f), 'rb').read()
ok = True
def check(name, cond):
    global ok; ok &= bool(cond); print(('PASS ' if cond else 'FAIL ') + name)
def rsa_ok(pub, msg, sig_b64):
    try: pub.verify(base64.b64decode(sig_b64), msg, padding.PKCS1v15(), hashes.SHA256()); return True
    except Exception: return False
gcm = lambda key, aad, nonce, ct: AESGCM(key).decrypt(nonce, base64.b64decode(ct), aad)

# a. AEAD_AES_256_GCM
check('go utils/aes_test.go (16-byte key => AES-128-GCM)', gcm(b'testAPIv3Key0000', b'Dl56FrqWQJF1t9LtC3vEUsniZKvbqdR8', b'wCq51qZv4Yfg', 'FsdXzxryWfKwvLJKf8LG/ToRPTRh8RN9wROC') == b'Hello World')
K = b'a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb'
check('java AeadAesCipherTest (32-byte key)', gcm(K, b'associatedData', b'uluk4a9R25RW', 'ulwSiIajGClcvcOYvOQ7+l+0PAbzzwI=') == b'message')
dc = json.loads(rd(W, 'java_sdk_download_certificate_response.json'))['data'][0]['encrypt_certificate']
check('java TestConfig DOWNLOAD_CERTIFICATE_RESPONSE decrypts to saved PEM', gcm(K, dc['associated_data'].encode(), dc['nonce'].encode(), dc['ciphertext']) == rd(W, 'java_sdk_download_certificate_decrypted.pem'))
# b/c. SHA256withRSA
goexp = 'BKyAfU4iMCuvXMXS0Wzam3V/cnxZ+JaqigPM5OhljS2iOT95OO6Fsuml2JkFANJU9K6q9bLlDhPXuoVz+pp4hAm6pHU4ld815U4jsKu1RkyaII+1CYBUYC8TK0XtJ8FwUXXz8vZHh58rrAVN1XwNyvD1vfpxrMT4SL536GLwvpUHlCqIMzoZUguLli/K8V29QiOhuH6IEqLNJn8e9b3nwNcQ7be3CzYGpDAKBfDGPCqCv8Rw5zndhlffk2FEA70G4hvMwe51qMN/RAJbknXG23bSlObuTCN7Ndj1aJGH6/L+hdwfLpUtJm4QYVazzW7DFD27EpSQEqA8bX9+8m1rLg=='
gk = serialization.load_pem_private_key(rd(W, 'go_sdk_test_private_key.pem'), None)
check('go sign("source") == expected', base64.b64encode(gk.sign(b'source', padding.PKCS1v15(), hashes.SHA256())).decode() == goexp)
gc = x509.load_pem_x509_certificate(rd(W, 'go_sdk_verifier_certificate_F5765756002FDD77.pem'))
check('go verify("source") with cert F5765756002FDD77', rsa_ok(gc.public_key(), b'source', goexp))
check('go verify("wrong source") rejected', not rsa_ok(gc.public_key(), b'wrong source', goexp))
nsig = 'tJHIiIS9eB2hAYstmAmbbD3ZE5LiIm/Ug5tuL4fC0YOFRWIHV39UFIZXC0e9Wl6lBu6sKvkqDkzpqzBsVHyXFlbYZTOQrVdG4b6LfTnK4mikv9++ixJMd3vTf2yCqvBkh98zs3Ds5zsYQakzbcwhmw4fMJs4nPLws28H0UW9FjDR//rxELLwXvV1VEA1IBLX70xptjL8hrfUjEE8kkry6yNJTHZRU8CAc7qHli2Ng1V1qb9ARbK8A3ThmFmPQvRGrapI/jS2laKKgYUmfdEdkNO6B2Cke5e8VTxY406ArAmQ90GAihDwIcb16TQMnzCMBoutnwZKNiKRACrFmtxw2Q=='
body = rd(W, 'go_sdk_notify_body.json')
msg = b'1624523846\nEcZ9Cmy4Xyx1i6RlJQzLcCyEqDa26NBz\n' + body + b'\n'
check('go notify verify message file == ts\\nnonce\\nbody\\n', msg == rd(W, 'go_sdk_notify_verify_message.txt'))
nc = x509.load_pem_x509_certificate(rd(W, 'go_sdk_notify_certificate_D7CE59D1F522D701.pem'))
check('go notify Wechatpay-Signature verifies', rsa_ok(nc.public_key(), msg, nsig))
r = json.loads(body)['resource']
check('go notify resource decrypts (key testMchAPIv3Key0, AES-128)', gcm(b'testMchAPIv3Key0', r['associated_data'].encode(), r['nonce'].encode(), r['ciphertext']) == rd(W, 'go_sdk_notify_resource_plaintext.json'))
jsig = 'Rq+5ZpWV6IHTWE1+9gCrYJKguNgbItpMdlIA+PVCPCdUAKNlohZz7CL7Y8xWDIFJjdGnErMj6Z+Q/h9CF5MV+nAVkqDmBR0uP5ppsUEzco4ijvKHsvI2ro4boSW6vSfQs3W8I4QSI9a0/NFIgvj83Fv27LIYZf7deaFWmEwd1fpAeJRCyoKyBeJPdsjVx0//Lqe6Wze2zVdliLcBvaHCfpd8+rAVGS+FQDeWgHqJ7n/Zy09LmV1/ghs7pO1mdjdD16SHKlysAD3K5hNGUJX/SHrEXEcu1yO1AOb/YvOVkjNh8243rcfXNE5L4ph2XS11vS+2aToKYSOcKUagf0LLaw=='
mc = x509.load_pem_x509_certificate(rd(W, 'java_sdk_merchant_certificate.pem'))
check('java RSAVerifierTest sig("message") verifies with merchant cert', rsa_ok(mc.public_key(), b'message', jsig))
check('java sig rejected by wechat_pay_public_key (test expects false)', not rsa_ok(serialization.load_pem_public_key(rd(W, 'java_sdk_wechat_pay_public_key.pem')), b'message', jsig))
# f. Alipay notify
def content(d, keep_sign_type):
    d = {k: v for k, v in d.items() if k != 'sign' and (keep_sign_type or k != 'sign_type')}
    return '&'.join(f"{k}={v if isinstance(v, str) else json.dumps(v, separators=(',', ':'), ensure_ascii=False)}" for k, v in sorted(d.items())).encode('utf-8')
p = json.loads(rd(A, 'nodejs_sdk_notify_trade_status_sync_TRADE_SUCCESS.params.json'))
k1 = serialization.load_pem_public_key(rd(A, 'nodejs_sdk_notify_test_inline_public_key_trade_status_sync.pem'))
check('alipay trade_status_sync content file matches rule (sign,sign_type removed)', content(p, False) == rd(A, 'nodejs_sdk_notify_trade_status_sync_sign_content.txt'))
check('alipay trade_status_sync notify verifies (V1: without sign_type)', rsa_ok(k1, content(p, False), p['sign']))
check('alipay trade_status_sync does NOT verify when sign_type kept', not rsa_ok(k1, content(p, True), p['sign']))
n = json.loads(rd(A, 'nodejs_sdk_notify_trade_status_sync_VERIFY_FAIL.params.json'))
check('alipay negative notify rejected', not rsa_ok(k1, content(n, False), n['sign']) and not rsa_ok(k1, content(n, True), n['sign']))
s = json.loads(rd(A, 'nodejs_sdk_notify_servicemarket_order_notify.params.json'))
k2 = serialization.load_pem_public_key(rd(A, 'nodejs_sdk_alipay-notify-sign-public-key-v2.pem'))
check('alipay servicemarket notify verifies (V2: sign_type kept)', rsa_ok(k2, content(s, True), s['sign']))
check('alipay servicemarket content file', content(s, True) == rd(A, 'nodejs_sdk_notify_servicemarket_sign_content.txt'))
resp = rd(A, 'nodejs_sdk_response_alipay_open_file_upload.json').decode()
key = 'alipay_open_file_upload_response'
start = resp.index(key + '"') + len(key) + 2; end = resp.rindex(',"sign"')
ka = serialization.load_pem_public_key(rd(A, 'nodejs_sdk_alipay-public-key.pem'))
check('alipay response sign verifies over inner JSON substring', rsa_ok(ka, resp[start:end].encode(), json.loads(resp)['sign']))
print('ALL PASS' if ok else 'SOME FAILED')
