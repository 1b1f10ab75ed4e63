//! WeChat Pay v3's published states, every one of them: `trade_state` and
//! the refund `status`, as the official Java SDK enumerates them
//! (wechatpay-apiv3/wechatpay-java at 1dab7be, `Transaction.java` and
//! `refund/model/Status.java`; vendored in `testdata/wechatpay/spec/`).
//!
//! Sources: "Q" is WeChat Pay's "商户订单号查询订单" (pay.weixin.qq.com/docs/
//! merchant/apis/query-order/direct-jsons/query-by-out-trade-no.html), whose
//! `trade_state` list gives each value's meaning; "SDK" is the Java SDK's
//! enum comment; "GO" is wechatpay-go's refund model comment. Notes:
//! `testdata/research/wechat_alipay_contract.md`.

use crate::contract::{row, to, Action, Row, PAYMENT, REFUND};
use finality_core::Status::*;

pub const TRADE_STATE: &str = "trade_state";
pub const REFUND_STATUS: &str = "refund_status";

pub const ROWS: &[Row] = &[
    row(TRADE_STATE, "SUCCESS", PAYMENT, to(Succeeded), "final, for `amount.total` to this `mchid`/`appid` (checked)", "`SUCCESS:支付成功` (Q)"),
    row(TRADE_STATE, "REFUND", PAYMENT, to(Succeeded), "the trade was paid and a refund started; refunds are their own operations, read by the refund query", "`REFUND:转入退款` (Q)"),
    row(TRADE_STATE, "NOTPAY", PAYMENT, to(Pending), "not final", "`NOTPAY:未支付` (Q)"),
    row(TRADE_STATE, "CLOSED", PAYMENT, to(Cancelled), "final: closed unpaid (by the merchant or on timeout)", "`CLOSED:已关闭` (Q)"),
    row(TRADE_STATE, "REVOKED", PAYMENT, to(Cancelled), "final: a payment-code order revoked", "`REVOKED:已撤销(仅付款码支付会返回)` (Q)"),
    row(TRADE_STATE, "USERPAYING", PAYMENT, to(Processing), "not final: the buyer is paying (payment codes)", "`USERPAYING:用户支付中(仅付款码支付会返回)` (Q)"),
    row(TRADE_STATE, "PAYERROR", PAYMENT, to(Failed), "final: the payment failed (payment codes)", "`PAYERROR:支付失败(仅付款码支付会返回)` (Q)"),
    row(TRADE_STATE, "ACCEPT", PAYMENT, to(Processing), "not final: received, waiting to be charged", "`ACCEPT` (SDK enum, no comment; not in Q's list)"),
    row(REFUND_STATUS, "SUCCESS", REFUND, to(Succeeded), "final, for `amount.refund` (checked)", "`SUCCESS - 退款成功` (SDK)"),
    row(REFUND_STATUS, "CLOSED", REFUND, to(Cancelled), "final: the refund was closed, no money went back", "`CLOSED - 退款关闭` (SDK)"),
    row(REFUND_STATUS, "PROCESSING", REFUND, to(Processing), "not final", "`PROCESSING - 退款处理中` (SDK)"),
    row(REFUND_STATUS, "ABNORMAL", REFUND, Action::Review, "the refund could not reach the buyer's card: the merchant must return it another way", "`退款到银行发现用户的卡作废或者冻结了，导致原路退款银行卡失败，可前往商户平台（pay.weixin.qq.com）-交易中心，手动处理此笔退款。` (GO)"),
];
