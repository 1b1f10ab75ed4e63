//! The simulated provider's report in the layouts the other providers'
//! fetch APIs serve (docs/SETTLEMENT_FORMATS.md): Stripe's itemized
//! balance report with the columns finality asks for, WeChat Pay's trade
//! bill (`ALL`: backtick-prefixed data rows, then the summary), Alipay's
//! trade bill (业务明细, GBK, `#` lines around the table). Ids are what
//! each simulated API answers for the payment: the simulator's id as
//! Stripe's PaymentIntent, `4200…` as WeChat Pay's `transaction_id`,
//! `2026…` as Alipay's `trade_no`.

use super::{date, decimal, Layout, Settled, Totals};
use std::io::Write;

/// Stripe's itemized balance report with the columns a report run asked
/// for, in that order ("the column order follows the `columns` array"), or
/// [`STRIPE_COLUMNS`] when it asked for none; a column the simulator does
/// not keep is written empty.
pub struct StripeItemized<W: Write> {
    w: csv::Writer<W>,
    columns: Vec<String>,
    n: u64,
    /// The currency the account settles in and units of it per 10,000 of
    /// a payment's currency: `gross`, `fee` and `net` are in it, and the
    /// payment's own money is in `customer_facing_*`.
    settles_in: Option<(String, i64)>,
}

/// The columns written when a run names none.
pub const STRIPE_COLUMNS: [&str; 8] = [
    "balance_transaction_id",
    "created_utc",
    "currency",
    "gross",
    "fee",
    "net",
    "reporting_category",
    "source_id",
];

impl<W: Write> StripeItemized<W> {
    pub fn new(
        out: W,
        columns: &[String],
        settles_in: Option<(String, i64)>,
    ) -> std::io::Result<Self> {
        let columns: Vec<String> = if columns.is_empty() {
            STRIPE_COLUMNS.iter().map(|c| c.to_string()).collect()
        } else {
            columns.to_vec()
        };
        let mut w = csv::Writer::from_writer(out);
        w.write_record(&columns)?;
        Ok(StripeItemized {
            w,
            columns,
            n: 0,
            settles_in,
        })
    }
}

impl<W: Write> Layout for StripeItemized<W> {
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()> {
        self.n += 1;
        let (category, gross, source) = if refund {
            ("refund", -gross, format!("re_{}", s.psp_reference))
        } else {
            ("charge", gross, format!("ch_{}", s.psp_reference))
        };
        let facing = (gross, s.currency.as_str());
        let (ccy, gross, fee) = match &self.settles_in {
            Some((c, rate)) if !c.eq_ignore_ascii_case(&s.currency) => {
                (c.as_str(), gross * rate / 10_000, fee * rate / 10_000)
            }
            _ => (s.currency.as_str(), gross, fee),
        };
        let value = |c: &str| match c {
            "balance_transaction_id" => format!("txn_{:012}", self.n),
            "created_utc" | "created" => date(s.at),
            "currency" => ccy.to_lowercase(),
            "gross" => decimal(gross, ccy),
            "fee" => decimal(-fee, ccy),
            "net" => decimal(gross - fee, ccy),
            "customer_facing_amount" => decimal(facing.0, facing.1),
            "customer_facing_currency" => facing.1.to_lowercase(),
            "reporting_category" => category.to_string(),
            "source_id" => source.clone(),
            "charge_id" => format!("ch_{}", s.psp_reference),
            "payment_intent_id" => s.psp_reference.clone(),
            _ => String::new(),
        };
        let row: Vec<String> = self.columns.iter().map(|c| value(c)).collect();
        self.w.write_record(&row)?;
        Ok(())
    }

    fn finish(&mut self, _t: &Totals) -> std::io::Result<u64> {
        self.w.flush()?;
        Ok(0)
    }
}

/// WeChat Pay's `ALL` trade bill header (docs/SETTLEMENT_FORMATS.md §5.3).
pub const WECHAT_HEADER: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注";

/// WeChat Pay's trade bill: every field of a data row starts with a
/// backtick; the summary header and row close it.
pub struct WechatBill<W: Write> {
    w: W,
    mchid: String,
    /// 特约商户号: the sub-merchant a service provider's line is of (`0`:
    /// none, a merchant's own bill).
    sub_mchid: String,
}

impl<W: Write> WechatBill<W> {
    pub fn new(mut out: W, mchid: &str, sub_mchid: &str) -> std::io::Result<Self> {
        writeln!(out, "{WECHAT_HEADER}")?;
        Ok(WechatBill {
            w: out,
            mchid: mchid.to_string(),
            sub_mchid: sub_mchid.to_string(),
        })
    }

    fn row(&mut self, fields: &[&str]) -> std::io::Result<()> {
        let line: Vec<String> = fields.iter().map(|f| format!("`{f}")).collect();
        writeln!(self.w, "{}", line.join(","))
    }
}

/// A fee in yuan as WeChat Pay writes it, five decimals.
fn fee_yuan(fen: i64) -> String {
    format!("{}.{:02}000", fen / 100, fen % 100)
}

impl<W: Write> Layout for WechatBill<W> {
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()> {
        let y = |v: i64| decimal(v, &s.currency);
        let txn = crate::wire::wechat_transaction_id(&s.psp_reference);
        let order = s.merchant_reference.clone().unwrap_or_default();
        let (state, settle, refund_id, refund_no, refund_amount, refund_state) = if refund {
            (
                "REFUND",
                y(0),
                crate::wire::wechat_refund_id(&s.psp_reference),
                format!("R{order}"),
                y(gross),
                "SUCCESS",
            )
        } else {
            ("SUCCESS", y(gross), "0".into(), "0".into(), y(0), "")
        };
        let (mchid, sub) = (self.mchid.clone(), self.sub_mchid.clone());
        self.row(&[
            &date(s.at),
            crate::wire::wechat_keys::APPID,
            &mchid,
            &sub,
            "",
            &txn,
            &order,
            "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o",
            "JSAPI",
            state,
            "CMC",
            &s.currency,
            &settle,
            &y(0),
            &refund_id,
            &refund_no,
            &refund_amount,
            &y(0),
            if refund { "ORIGINAL" } else { "" },
            refund_state,
            "sim",
            "",
            &fee_yuan(fee),
            "0.60%",
            &y(gross),
            &if refund { y(gross) } else { y(0) },
            "",
        ])
    }

    fn finish(&mut self, t: &Totals) -> std::io::Result<u64> {
        let ccy = if t.currency.is_empty() {
            "CNY"
        } else {
            &t.currency
        };
        writeln!(
            self.w,
            "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额"
        )?;
        let y = |v: i64| decimal(v, ccy);
        let fields = [
            (t.charges + t.refunds).to_string(),
            y(t.gross),
            y(t.refunded),
            y(0),
            fee_yuan(t.fees),
            y(t.gross),
            y(t.refunded),
        ];
        self.row(&fields.iter().map(String::as_str).collect::<Vec<_>>())?;
        self.w.flush()?;
        Ok(0)
    }
}

/// Alipay's trade bill detail header, 25 columns (docs/SETTLEMENT_FORMATS.md §4.2).
pub const ALIPAY_HEADER: &str = "支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注";

/// Alipay's trade bill detail (UTF-8 here; [`gbk_zip`] makes the file
/// Alipay serves).
pub struct AlipayBill<W: Write> {
    w: W,
}

impl<W: Write> AlipayBill<W> {
    pub fn new(mut out: W, account: &str, day: &str) -> std::io::Result<Self> {
        writeln!(out, "#支付宝业务明细查询")?;
        writeln!(out, "#账号：[{account}]")?;
        writeln!(
            out,
            "#起始日期：[{day} 00:00:00]   终止日期：[{day} 23:59:59]"
        )?;
        writeln!(out, "#-----------------------------------------业务明细列表----------------------------------------")?;
        writeln!(out, "{ALIPAY_HEADER}")?;
        Ok(AlipayBill { w: out })
    }
}

impl<W: Write> Layout for AlipayBill<W> {
    fn line(&mut self, s: &Settled, refund: bool, gross: i64, fee: i64) -> std::io::Result<()> {
        let y = |v: i64| decimal(v, &s.currency);
        let trade_no = crate::wire::alipay_trade_no(&s.psp_reference);
        let order = s.merchant_reference.clone().unwrap_or_default();
        let at = date(s.at);
        let (business, amount, received, batch) = if refund {
            ("退款", y(-gross), y(-gross), format!("R{order}"))
        } else {
            ("交易", y(gross), y(gross), String::new())
        };
        writeln!(
            self.w,
            "{trade_no}\t,{order}\t,{business},sim,{at},{at},,,,,buyer@example.com,{amount},{received},0.00,0.00,0.00,0.00,0.00,,0.00,0.00,{batch},{},0.00,",
            y(-fee)
        )
    }

    fn finish(&mut self, t: &Totals) -> std::io::Result<u64> {
        writeln!(self.w, "#-----------------------------------------业务明细列表结束------------------------------------")?;
        writeln!(
            self.w,
            "#交易合计：{}笔，商家实收：{}元，服务费：{}元",
            t.charges,
            decimal(t.gross, "CNY"),
            decimal(t.fees, "CNY")
        )?;
        writeln!(self.w, "#退款合计：{}笔", t.refunds)?;
        self.w.flush()?;
        Ok(0)
    }
}

/// Alipay's download: a zip holding the detail and its summary, GBK, as
/// `{pid}_{yyyymmdd}_业务明细.csv` and `…_业务明细(汇总).csv`.
pub fn gbk_zip(detail_utf8: &str, pid: &str, yyyymmdd: &str) -> std::io::Result<Vec<u8>> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let (detail, _, _) = encoding_rs::GBK.encode(detail_utf8);
        let summary_text = format!("#支付宝业务明细查询(汇总)\n#账号：[{pid}]\n");
        let (summary, _, _) = encoding_rs::GBK.encode(&summary_text);
        for (name, body) in [
            (format!("{pid}_{yyyymmdd}_业务明细.csv"), detail),
            (format!("{pid}_{yyyymmdd}_业务明细(汇总).csv"), summary),
        ] {
            zip.start_file(name, opts).map_err(std::io::Error::other)?;
            zip.write_all(&body)?;
        }
        zip.finish().map_err(std::io::Error::other)?;
    }
    Ok(buf.into_inner())
}
