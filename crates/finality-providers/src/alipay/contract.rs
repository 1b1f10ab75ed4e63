//! Alipay's published trade and refund statuses, every one of them:
//! `trade_status` of `alipay.trade.query` and `refund_status` of
//! `alipay.trade.fastpay.refund.query`, as the official PHP SDK documents
//! them (alipay/alipay-sdk-php-all at d95249a,
//! `AlipayTradeQueryResponseModel.php` and
//! `AlipayTradeFastpayRefundQueryResponseModel.php`; vendored in
//! `testdata/alipay/spec/`). Notes:
//! `testdata/research/wechat_alipay_contract.md`.

use crate::contract::{row, to, Action, Row, PAYMENT, REFUND};
use finality_core::Status::*;

pub const TRADE_STATUS: &str = "trade_status";
pub const REFUND_STATUS: &str = "refund_status";

pub const ROWS: &[Row] = &[
    row(TRADE_STATUS, "WAIT_BUYER_PAY", PAYMENT, to(Pending), "not final", "`WAIT_BUYER_PAY（交易创建，等待买家付款）` (SDK, trade_status)"),
    row(TRADE_STATUS, "TRADE_CLOSED", PAYMENT, Action::Depends, "two meanings: closed unpaid (cancelled), or refunded in full after payment (a notification with `refund_fee`/`gmt_refund`: reversed; a query answer with a payment time `send_pay_date`: review)", "`TRADE_CLOSED（未付款交易超时关闭，或支付完成后全额退款）` (SDK, trade_status)"),
    row(TRADE_STATUS, "TRADE_SUCCESS", PAYMENT, to(Succeeded), "final, for `total_amount` to this `app_id`/`seller_id` (checked); partial refunds keep it", "`TRADE_SUCCESS（交易支付成功）` (SDK, trade_status)"),
    row(TRADE_STATUS, "TRADE_FINISHED", PAYMENT, to(Succeeded), "final: paid, no more refunds possible", "`TRADE_FINISHED（交易结束，不可退款）` (SDK, trade_status)"),
    row(REFUND_STATUS, "REFUND_SUCCESS", REFUND, to(Succeeded), "final, for `refund_amount` (checked); no field yet: not final, asked again", "`REFUND_SUCCESS 退款处理成功`; `未返回该字段表示退款请求未收到或者退款失败` (SDK, refund_status)"),
];
