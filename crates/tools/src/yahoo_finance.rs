//! YahooFinance (`agent/tools/yahoofinance.py`, function `yahoo_finance`): the sections
//! RAGFlow builds with `yfinance` 0.2.65 (`info`, `history()`, `calendar` under the
//! `financials` switch, yearly and quarterly `balance_sheet` and `cashflow`, `news`),
//! fetched from the JSON endpoints yfinance calls and rendered as pandas `to_markdown`
//! renders the frames (tabulate's pipe table, through [`crate::sql::frame`]).
//!
//! Requests go as yfinance's "basic" cookie strategy sends them: one cookie from
//! `https://fc.yahoo.com`, a crumb from `/v1/test/getcrumb`, then the `Cookie` header
//! and a `crumb` query parameter on every call. A 429 answer is yfinance's
//! `YFRateLimitError` (retried by RAGFlow's loop).
//!
//! Differences from RAGFlow: yfinance's second cookie strategy (the `guce` consent
//! flow, tried after an error status) is not reproduced; history dates carry the
//! exchange's current UTC offset (`gmtoffset`), so rows before a daylight-saving change
//! inside the month show the later offset; calendar dates are UTC days (yfinance uses
//! the server's local time zone); a separate "live" row Yahoo sometimes appends is kept
//! as its own row. `CANVAS_YAHOO_FINANCE_BASE_URL` replaces the three Yahoo hosts
//! (`query1`, `query2`, `finance.yahoo.com`), `CANVAS_YAHOO_FINANCE_COOKIE_URL` the
//! cookie URL.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::net::{ClientOptions, describe};
use super::sql::frame::{FloatFmt, markdown_with};
use super::sql::{Cell, ResultSet};
use super::web::check_boolean;
use super::{Call, Param, Tool, ToolMeta, with_retries};
use canvas_engine::{BuildError, CResult};
use canvas_pyrt::{Object, py_repr, py_str, py_type_name, truthy};

const BASE_VAR: &str = "CANVAS_YAHOO_FINANCE_BASE_URL";
const COOKIE_VAR: &str = "CANVAS_YAHOO_FINANCE_COOKIE_URL";
const QUERY1: &str = "https://query1.finance.yahoo.com";
const QUERY2: &str = "https://query2.finance.yahoo.com";
const ROOT: &str = "https://finance.yahoo.com";
const COOKIE_URL: &str = "https://fc.yahoo.com";
const TIMEOUT: Duration = Duration::from_secs(30);
/// Yahoo answers scripted user agents with 429s; yfinance sends a browser's.
const BROWSER_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.0.0 Safari/537.36";
/// `YFRateLimitError`'s text.
const RATE_LIMITED: &str = "Too Many Requests. Rate limited. Try after a while.";
/// `datetime(2016, 12, 31).timestamp()` on a UTC server: where statements start.
const STATEMENTS_START: i64 = 1_483_142_400;

/// The `info` quoteSummary modules.
const INFO_MODULES: &str =
    "financialData,quoteType,defaultKeyStatistics,assetProfile,summaryDetail";

/// yfinance's `fundamentals_keys['balance-sheet']`, in Yahoo's display order.
#[rustfmt::skip]
const BALANCE_SHEET_KEYS: &[&str] = &[
    "TreasurySharesNumber", "PreferredSharesNumber", "OrdinarySharesNumber", "ShareIssued",
    "NetDebt", "TotalDebt", "TangibleBookValue", "InvestedCapital", "WorkingCapital",
    "NetTangibleAssets", "CapitalLeaseObligations", "CommonStockEquity", "PreferredStockEquity",
    "TotalCapitalization", "TotalEquityGrossMinorityInterest", "MinorityInterest",
    "StockholdersEquity", "OtherEquityInterest", "GainsLossesNotAffectingRetainedEarnings",
    "OtherEquityAdjustments", "FixedAssetsRevaluationReserve",
    "ForeignCurrencyTranslationAdjustments", "MinimumPensionLiabilities", "UnrealizedGainLoss",
    "TreasuryStock", "RetainedEarnings", "AdditionalPaidInCapital", "CapitalStock",
    "OtherCapitalStock", "CommonStock", "PreferredStock", "TotalPartnershipCapital",
    "GeneralPartnershipCapital", "LimitedPartnershipCapital",
    "TotalLiabilitiesNetMinorityInterest", "TotalNonCurrentLiabilitiesNetMinorityInterest",
    "OtherNonCurrentLiabilities", "LiabilitiesHeldforSaleNonCurrent", "RestrictedCommonStock",
    "PreferredSecuritiesOutsideStockEquity", "DerivativeProductLiabilities", "EmployeeBenefits",
    "NonCurrentPensionAndOtherPostretirementBenefitPlans", "NonCurrentAccruedExpenses",
    "DuetoRelatedPartiesNonCurrent", "TradeandOtherPayablesNonCurrent",
    "NonCurrentDeferredLiabilities", "NonCurrentDeferredRevenue",
    "NonCurrentDeferredTaxesLiabilities", "LongTermDebtAndCapitalLeaseObligation",
    "LongTermCapitalLeaseObligation", "LongTermDebt", "LongTermProvisions",
    "CurrentLiabilities", "OtherCurrentLiabilities", "CurrentDeferredLiabilities",
    "CurrentDeferredRevenue", "CurrentDeferredTaxesLiabilities",
    "CurrentDebtAndCapitalLeaseObligation", "CurrentCapitalLeaseObligation", "CurrentDebt",
    "OtherCurrentBorrowings", "LineOfCredit", "CommercialPaper", "CurrentNotesPayable",
    "PensionandOtherPostRetirementBenefitPlansCurrent", "CurrentProvisions",
    "PayablesAndAccruedExpenses", "CurrentAccruedExpenses", "InterestPayable", "Payables",
    "OtherPayable", "DuetoRelatedPartiesCurrent", "DividendsPayable", "TotalTaxPayable",
    "IncomeTaxPayable", "AccountsPayable", "TotalAssets", "TotalNonCurrentAssets",
    "OtherNonCurrentAssets", "DefinedPensionBenefit", "NonCurrentPrepaidAssets",
    "NonCurrentDeferredAssets", "NonCurrentDeferredTaxesAssets",
    "DuefromRelatedPartiesNonCurrent", "NonCurrentNoteReceivables",
    "NonCurrentAccountsReceivable", "FinancialAssets", "InvestmentsAndAdvances",
    "OtherInvestments", "InvestmentinFinancialAssets", "HeldToMaturitySecurities",
    "AvailableForSaleSecurities",
    "FinancialAssetsDesignatedasFairValueThroughProfitorLossTotal", "TradingSecurities",
    "LongTermEquityInvestment", "InvestmentsinJointVenturesatCost",
    "InvestmentsInOtherVenturesUnderEquityMethod", "InvestmentsinAssociatesatCost",
    "InvestmentsinSubsidiariesatCost", "InvestmentProperties",
    "GoodwillAndOtherIntangibleAssets", "OtherIntangibleAssets", "Goodwill", "NetPPE",
    "AccumulatedDepreciation", "GrossPPE", "Leases", "ConstructionInProgress",
    "OtherProperties", "MachineryFurnitureEquipment", "BuildingsAndImprovements",
    "LandAndImprovements", "Properties", "CurrentAssets", "OtherCurrentAssets",
    "HedgingAssetsCurrent", "AssetsHeldForSaleCurrent", "CurrentDeferredAssets",
    "CurrentDeferredTaxesAssets", "RestrictedCash", "PrepaidAssets", "Inventory",
    "InventoriesAdjustmentsAllowances", "OtherInventories", "FinishedGoods", "WorkInProcess",
    "RawMaterials", "Receivables", "ReceivablesAdjustmentsAllowances", "OtherReceivables",
    "DuefromRelatedPartiesCurrent", "TaxesReceivable", "AccruedInterestReceivable",
    "NotesReceivable", "LoansReceivable", "AccountsReceivable",
    "AllowanceForDoubtfulAccountsReceivable", "GrossAccountsReceivable",
    "CashCashEquivalentsAndShortTermInvestments", "OtherShortTermInvestments",
    "CashAndCashEquivalents", "CashEquivalents", "CashFinancial",
    "CashCashEquivalentsAndFederalFundsSold",
];

/// yfinance's `fundamentals_keys['cash-flow']`, in Yahoo's display order.
#[rustfmt::skip]
const CASH_FLOW_KEYS: &[&str] = &[
    "ForeignSales", "DomesticSales", "AdjustedGeographySegmentData", "FreeCashFlow",
    "RepurchaseOfCapitalStock", "RepaymentOfDebt", "IssuanceOfDebt", "IssuanceOfCapitalStock",
    "CapitalExpenditure", "InterestPaidSupplementalData", "IncomeTaxPaidSupplementalData",
    "EndCashPosition", "OtherCashAdjustmentOutsideChangeinCash", "BeginningCashPosition",
    "EffectOfExchangeRateChanges", "ChangesInCash", "OtherCashAdjustmentInsideChangeinCash",
    "CashFlowFromDiscontinuedOperation", "FinancingCashFlow",
    "CashFromDiscontinuedFinancingActivities", "CashFlowFromContinuingFinancingActivities",
    "NetOtherFinancingCharges", "InterestPaidCFF", "ProceedsFromStockOptionExercised",
    "CashDividendsPaid", "PreferredStockDividendPaid", "CommonStockDividendPaid",
    "NetPreferredStockIssuance", "PreferredStockPayments", "PreferredStockIssuance",
    "NetCommonStockIssuance", "CommonStockPayments", "CommonStockIssuance",
    "NetIssuancePaymentsOfDebt", "NetShortTermDebtIssuance", "ShortTermDebtPayments",
    "ShortTermDebtIssuance", "NetLongTermDebtIssuance", "LongTermDebtPayments",
    "LongTermDebtIssuance", "InvestingCashFlow", "CashFromDiscontinuedInvestingActivities",
    "CashFlowFromContinuingInvestingActivities", "NetOtherInvestingChanges",
    "InterestReceivedCFI", "DividendsReceivedCFI", "NetInvestmentPurchaseAndSale",
    "SaleOfInvestment", "PurchaseOfInvestment", "NetInvestmentPropertiesPurchaseAndSale",
    "SaleOfInvestmentProperties", "PurchaseOfInvestmentProperties",
    "NetBusinessPurchaseAndSale", "SaleOfBusiness", "PurchaseOfBusiness",
    "NetIntangiblesPurchaseAndSale", "SaleOfIntangibles", "PurchaseOfIntangibles",
    "NetPPEPurchaseAndSale", "SaleOfPPE", "PurchaseOfPPE", "CapitalExpenditureReported",
    "OperatingCashFlow", "CashFromDiscontinuedOperatingActivities",
    "CashFlowFromContinuingOperatingActivities", "TaxesRefundPaid", "InterestReceivedCFO",
    "InterestPaidCFO", "DividendReceivedCFO", "DividendPaidCFO", "ChangeInWorkingCapital",
    "ChangeInOtherWorkingCapital", "ChangeInOtherCurrentLiabilities",
    "ChangeInOtherCurrentAssets", "ChangeInPayablesAndAccruedExpense", "ChangeInAccruedExpense",
    "ChangeInInterestPayable", "ChangeInPayable", "ChangeInDividendPayable",
    "ChangeInAccountPayable", "ChangeInTaxPayable", "ChangeInIncomeTaxPayable",
    "ChangeInPrepaidAssets", "ChangeInInventory", "ChangeInReceivables",
    "ChangesInAccountReceivables", "OtherNonCashItems",
    "ExcessTaxBenefitFromStockBasedCompensation", "StockBasedCompensation",
    "UnrealizedGainLossOnInvestmentSecurities", "ProvisionandWriteOffofAssets",
    "AssetImpairmentCharge", "AmortizationOfSecurities", "DeferredTax", "DeferredIncomeTax",
    "DepreciationAmortizationDepletion", "Depletion", "DepreciationAndAmortization",
    "AmortizationCashFlow", "AmortizationOfIntangibles", "Depreciation", "OperatingGainsLosses",
    "PensionAndEmployeeBenefitExpense", "EarningsLossesFromEquityInvestments",
    "GainLossOnInvestmentSecurities", "NetForeignCurrencyExchangeGainLoss",
    "GainLossOnSaleOfPPE", "GainLossOnSaleOfBusiness", "NetIncomeFromContinuingOperations",
    "CashFlowsfromusedinOperatingActivitiesDirect", "TaxesRefundPaidDirect",
    "InterestReceivedDirect", "InterestPaidDirect", "DividendsReceivedDirect",
    "DividendsPaidDirect", "ClassesofCashPayments", "OtherCashPaymentsfromOperatingActivities",
    "PaymentsonBehalfofEmployees", "PaymentstoSuppliersforGoodsandServices",
    "ClassesofCashReceiptsfromOperatingActivities", "OtherCashReceiptsfromOperatingActivities",
    "ReceiptsfromGovernmentGrants", "ReceiptsfromCustomers",
];

/// Which sections to produce (RAGFlow's boolean parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sections {
    info: bool,
    history: bool,
    financials: bool,
    balance_sheet: bool,
    cash_flow_statement: bool,
    news: bool,
}

/// Build from DSL parameters, with RAGFlow's `check()`.
pub fn build(params: &Object) -> Result<Box<dyn Tool>, BuildError> {
    for (name, descr) in [
        ("info", "get all stock info"),
        ("history", "get historical market data"),
        ("count", "show share count"),
        ("financials", "show financials"),
        ("income_stmt", "income statement"),
        ("balance_sheet", "balance sheet"),
        ("cash_flow_statement", "cash flow statement"),
        ("news", "show news"),
    ] {
        check_boolean(params, name, descr)?;
    }
    let flag =
        |name: &str, default: bool| params.get(name).and_then(Value::as_bool).unwrap_or(default);
    Ok(Box::new(YahooFinance {
        meta: ToolMeta {
            name: "yahoo_finance",
            description: "The Yahoo Finance is a service that provides access to real-time and historical stock market data. It enables users to fetch various types of stock information, such as price quotes, historical prices, company profiles, and financial news. The API offers structured data, allowing developers to integrate market data into their applications and analysis tools.",
            parameters: vec![Param::string(
                "stock_code",
                "The stock code or company name.",
                "{sys.query}",
            )],
        },
        sections: Sections {
            info: flag("info", true),
            history: flag("history", false),
            financials: flag("financials", false),
            balance_sheet: flag("balance_sheet", false),
            cash_flow_statement: flag("cash_flow_statement", false),
            news: flag("news", true),
        },
    }))
}

/// The YahooFinance tool.
pub struct YahooFinance {
    meta: ToolMeta,
    sections: Sections,
}

// ---- frames rendered as pandas `to_markdown` does ----

/// A pandas frame: index (with its name), column labels, rows of cells as `.values`
/// hands them to tabulate.
#[derive(Debug)]
struct Frame {
    index_name: Option<String>,
    index: Vec<Cell>,
    columns: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

impl Frame {
    /// `df.to_markdown()`: tabulate with `headers="keys"` and the index shown. The index
    /// is a first column headed by its name (`""` without one); a frame without rows
    /// has no index column, and tabulate draws its rule without alignment colons.
    fn to_markdown(&self) -> String {
        let mut headers: Vec<String> = self.index_name.iter().cloned().collect();
        headers.extend(self.columns.iter().cloned());
        if self.index.is_empty() {
            if headers.is_empty() {
                // `_pipe_line_with_colons([], [])`.
                return "||".into();
            }
            let md = markdown_with(
                &ResultSet {
                    columns: headers,
                    rows: Vec::new(),
                },
                FloatFmt::G,
            );
            return md
                .split('\n')
                .enumerate()
                .map(|(i, l)| {
                    if i == 1 {
                        l.replace(':', "-")
                    } else {
                        l.into()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
        if self.index_name.is_none() {
            headers.insert(0, String::new());
        }
        let rows = self
            .index
            .iter()
            .zip(&self.rows)
            .map(|(i, r)| {
                std::iter::once(i.clone())
                    .chain(r.iter().cloned())
                    .collect()
            })
            .collect();
        markdown_with(
            &ResultSet {
                columns: headers,
                rows,
            },
            FloatFmt::G,
        )
    }
}

/// A JSON value as the Python object `json.loads` gives.
fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cell::Int(i128::from(i)),
            (None, Some(u)) => Cell::Int(i128::from(u)),
            _ => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cell::Text(s.clone()),
        other => Cell::Json(other.clone()),
    }
}

/// A JSON number as a float (`None`, NaN).
fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// Python's `json.loads` failure text for an answer that is not JSON.
fn json_error(body: &str, e: &serde_json::Error) -> String {
    let t = body.trim_start();
    if t.is_empty() || !t.starts_with(|c: char| "{[\"-tfn".contains(c) || c.is_ascii_digit()) {
        let col = body.len() - t.len();
        return format!("Expecting value: line 1 column {} (char {col})", col + 1);
    }
    e.to_string()
}

fn parse_json(body: &str) -> Result<Value, String> {
    serde_json::from_str(body).map_err(|e| json_error(body, &e))
}

// ---- info ----

/// yfinance's `_format`: `{raw, fmt}` pairs become the raw value (the formatted one for
/// two time keys), non-breaking spaces become spaces, recursively.
fn format_info(key: Option<&str>, v: &Value) -> Value {
    match v {
        Value::Object(o) if o.contains_key("raw") && o.contains_key("fmt") => {
            if matches!(key, Some("regularMarketTime" | "postMarketTime")) {
                o["fmt"].clone()
            } else {
                o["raw"].clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| format_info(None, x)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), format_info(Some(k), x)))
                .collect(),
        ),
        Value::String(s) => Value::String(s.replace('\u{a0}', " ")),
        other => other.clone(),
    }
}

/// The first result of a `quoteSummary` or `quoteResponse` document, its `symbol` set.
fn first_result(
    doc: Option<&Value>,
    key: &str,
    symbol: &str,
) -> Result<Option<Map<String, Value>>, String> {
    let Some(section) = doc.and_then(|d| d.get(key)) else {
        return Ok(None);
    };
    match section.get("result") {
        None => Ok(None),
        Some(Value::Array(a)) => match a.first() {
            Some(Value::Object(o)) => {
                let mut o = o.clone();
                o.insert("symbol".into(), json!(symbol));
                Ok(Some(o))
            }
            Some(other) => Err(format!(
                "'{}' object does not support item assignment",
                py_type_name(other)
            )),
            None => Ok(None),
        },
        Some(Value::Null) => Err("object of type 'NoneType' has no len()".into()),
        Some(other) => Err(format!(
            "object of type '{}' has no len()",
            py_type_name(other)
        )),
    }
}

/// `Ticker.info` from the quoteSummary and v7 quote documents (either may be missing,
/// as yfinance drops a document whose request failed): merged, modules flattened,
/// `maxAge` 1 read as 86400, values formatted.
fn merge_info(
    summary: Option<&Value>,
    quote: Option<&Value>,
    symbol: &str,
) -> Result<Map<String, Value>, String> {
    let mut merged = Map::new();
    for (doc, key) in [(summary, "quoteSummary"), (quote, "quoteResponse")] {
        if let Some(o) = first_result(doc, key, symbol)? {
            for (k, v) in o {
                merged.insert(k, v);
            }
        }
    }
    let mut flat = Map::new();
    for (k, v) in merged {
        match v {
            Value::Object(inner) => {
                for (k1, v1) in inner {
                    if v1.is_null() {
                        continue;
                    }
                    let v1 = if k1 == "maxAge" && v1.as_f64() == Some(1.0) {
                        json!(86400)
                    } else {
                        v1
                    };
                    flat.insert(k1, v1);
                }
            }
            Value::Null => {}
            other => {
                flat.insert(k, other);
            }
        }
    }
    Ok(flat
        .into_iter()
        .map(|(k, v)| {
            let f = format_info(Some(&k), &v);
            (k, f)
        })
        .collect())
}

/// The `trailingPegRatio` of a timeseries answer (`None` when Yahoo has none).
fn peg_ratio(body: &str) -> Result<Value, String> {
    let doc = parse_json(body)?;
    let ts = doc
        .get("timeseries")
        .filter(|t| !t.is_null())
        .or_else(|| doc.get("finance"))
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(err) = ts.get("error").filter(|e| !e.is_null()) {
        return Err(format!(
            "Failed to parse json response from Yahoo Finance: {}",
            py_str(err)
        ));
    }
    let last = ts
        .get("result")
        .and_then(|r| r.get(0))
        .and_then(|r| r.get("trailingPegRatio"))
        .and_then(Value::as_array)
        .and_then(|a| a.last())
        .and_then(|x| x.get("reportedValue"))
        .and_then(|x| x.get("raw"))
        .cloned();
    Ok(last.unwrap_or(Value::Null))
}

/// `pd.Series(info).to_markdown()`: one column named `0`.
fn info_frame(info: &Map<String, Value>) -> Frame {
    Frame {
        index_name: None,
        index: info.keys().map(|k| Cell::Text(k.clone())).collect(),
        columns: vec!["0".into()],
        rows: info.values().map(|v| vec![cell(v)]).collect(),
    }
}

// ---- history ----

/// `utils.empty_df()`: what `history()` gives when Yahoo has no prices.
fn empty_history() -> Frame {
    Frame {
        index_name: Some("Date".into()),
        index: Vec::new(),
        columns: ["Open", "High", "Low", "Close", "Adj Close", "Volume"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    }
}

/// `±HH:MM` of an offset in seconds.
fn offset_text(secs: i64) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.abs();
    format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
}

/// The exchange-local day of a timestamp.
fn local_day(ts: i64, offset: i64) -> Option<chrono::NaiveDate> {
    chrono::DateTime::from_timestamp(ts.checked_add(offset)?, 0).map(|d| d.date_naive())
}

/// `history()` (one month of daily bars, adjusted, with dividends and splits) from a
/// `v8/finance/chart` answer; Yahoo's errors give the empty frame.
fn history_frame(body: &str) -> Frame {
    let Ok(doc) = serde_json::from_str::<Value>(body) else {
        return empty_history();
    };
    let chart = doc.get("chart");
    if chart
        .and_then(|c| c.get("error"))
        .is_some_and(|e| !e.is_null())
    {
        return empty_history();
    }
    let Some(res) = chart.and_then(|c| c.get("result")).and_then(|r| r.get(0)) else {
        return empty_history();
    };
    let meta = res.get("meta").cloned().unwrap_or(Value::Null);
    if let Some(ranges) = meta.get("validRanges").and_then(Value::as_array)
        && !ranges.iter().any(|r| r == "1mo")
    {
        return empty_history();
    }
    let (Some(stamps), Some(quote)) = (
        res.get("timestamp").and_then(Value::as_array),
        res.get("indicators")
            .and_then(|i| i.get("quote"))
            .and_then(|q| q.get(0)),
    ) else {
        return empty_history();
    };
    let series = |v: Option<&Value>| -> Vec<f64> {
        (0..stamps.len())
            .map(|i| num(v.and_then(|a| a.get(i))))
            .collect()
    };
    let open = series(quote.get("open"));
    let high = series(quote.get("high"));
    let low = series(quote.get("low"));
    let close = series(quote.get("close"));
    let volume = series(quote.get("volume"));
    let adj = match res
        .get("indicators")
        .and_then(|i| i.get("adjclose"))
        .and_then(|a| a.get(0))
        .and_then(|a| a.get("adjclose"))
    {
        Some(a) => series(Some(a)),
        None => close.clone(),
    };
    let offset = meta.get("gmtoffset").and_then(Value::as_i64).unwrap_or(0);
    let events = res.get("events");
    let by_day = |name: &str, amount: &dyn Fn(&Value) -> f64| -> Vec<(chrono::NaiveDate, f64)> {
        events
            .and_then(|e| e.get(name))
            .and_then(Value::as_object)
            .map(|m| {
                m.values()
                    .filter_map(|ev| {
                        let day = local_day(ev.get("date")?.as_i64()?, offset)?;
                        Some((day, amount(ev)))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let dividends = by_day("dividends", &|ev| num(ev.get("amount")));
    let splits = by_day("splits", &|ev| {
        num(ev.get("numerator")) / num(ev.get("denominator"))
    });
    let gains = by_day("capitalGains", &|ev| num(ev.get("amount")));
    let has_gains = events.and_then(|e| e.get("capitalGains")).is_some();
    let on = |list: &[(chrono::NaiveDate, f64)], day: chrono::NaiveDate| {
        list.iter()
            .filter(|(d, _)| *d == day)
            .map(|(_, a)| *a)
            .next_back()
            .unwrap_or(0.0)
    };
    let mut rows: Vec<(i64, chrono::NaiveDate, Vec<f64>)> = Vec::new();
    for (i, ts) in stamps.iter().enumerate() {
        let Some(day) = ts.as_i64().and_then(|t| local_day(t, offset)) else {
            continue;
        };
        // `auto_adjust`: prices scaled by Adj Close / Close, Close replaced.
        let ratio = adj[i] / close[i];
        let mut vals = vec![
            open[i] * ratio,
            high[i] * ratio,
            low[i] * ratio,
            adj[i],
            if volume[i].is_nan() { 0.0 } else { volume[i] },
            on(&dividends, day),
            on(&splits, day),
        ];
        if has_gains {
            vals.push(on(&gains, day));
        }
        // `keepna=False`: rows with every value missing or zero go (Close before
        // adjustment counts too).
        let raw = [open[i], high[i], low[i], close[i], adj[i]];
        let empty = raw
            .iter()
            .chain(&vals[4..])
            .all(|v| v.is_nan() || *v == 0.0);
        if !empty {
            rows.push((ts.as_i64().unwrap_or(0), day, vals));
        }
    }
    rows.sort_by_key(|(t, _, _)| *t);
    let mut columns: Vec<String> = [
        "Open",
        "High",
        "Low",
        "Close",
        "Volume",
        "Dividends",
        "Stock Splits",
    ]
    .map(String::from)
    .to_vec();
    if has_gains {
        columns.push("Capital Gains".into());
    }
    let off = offset_text(offset);
    Frame {
        index_name: Some("Date".into()),
        index: rows
            .iter()
            .map(|(_, d, _)| Cell::Text(format!("{} 00:00:00{off}", d.format("%Y-%m-%d"))))
            .collect(),
        columns,
        // `df.values` of an all-float frame: every value a float.
        rows: rows
            .into_iter()
            .map(|(_, _, v)| v.into_iter().map(Cell::Float).collect())
            .collect(),
    }
}

// ---- calendar ----

/// A timestamp's day, as `datetime.fromtimestamp(ts).date()` on a UTC server.
fn utc_day(v: &Value) -> Result<String, String> {
    let ts = v.as_f64().ok_or_else(|| {
        format!(
            "'{}' object cannot be interpreted as an integer",
            py_type_name(v)
        )
    })?;
    chrono::DateTime::from_timestamp(ts.floor() as i64, 0)
        .map(|d| d.date_naive().format("%Y-%m-%d").to_string())
        .ok_or_else(|| "year is out of range".to_string())
}

/// `pd.DataFrame(ticker.calendar)` from a `calendarEvents` answer (`None`: the request
/// failed, an empty calendar).
fn calendar_frame(doc: Option<&Value>) -> Result<Frame, String> {
    let mut cal: Vec<(String, Value)> = Vec::new();
    if let Some(doc) = doc {
        let events = doc
            .get("quoteSummary")
            .and_then(|q| q.get("result"))
            .and_then(|r| r.get(0))
            .and_then(|r| r.get("calendarEvents"))
            .ok_or_else(|| {
                format!(
                    "Failed to parse json response from Yahoo Finance: {}",
                    py_repr(doc)
                )
            })?;
        if let Some(d) = events.get("dividendDate") {
            cal.push(("Dividend Date".into(), json!(utc_day(d)?)));
        }
        if let Some(d) = events.get("exDividendDate") {
            cal.push(("Ex-Dividend Date".into(), json!(utc_day(d)?)));
        }
        if let Some(e) = events.get("earnings").filter(|e| !e.is_null()) {
            let dates = match e.get("earningsDate") {
                None => Vec::new(),
                Some(Value::Array(a)) => a.iter().map(utc_day).collect::<Result<Vec<_>, _>>()?,
                Some(other) => {
                    return Err(format!("'{}' object is not iterable", py_type_name(other)));
                }
            };
            cal.push(("Earnings Date".into(), json!(dates)));
            for (label, key) in [
                ("Earnings High", "earningsHigh"),
                ("Earnings Low", "earningsLow"),
                ("Earnings Average", "earningsAverage"),
                ("Revenue High", "revenueHigh"),
                ("Revenue Low", "revenueLow"),
                ("Revenue Average", "revenueAverage"),
            ] {
                cal.push((label.into(), e.get(key).cloned().unwrap_or(Value::Null)));
            }
        }
    }
    // The one list sets the row count; scalars repeat on every row.
    let nrows = match cal.iter().find_map(|(_, v)| v.as_array()) {
        Some(a) => a.len(),
        None if cal.is_empty() => 0,
        None => return Err("If using all scalar values, you must pass an index".into()),
    };
    let rows = (0..nrows)
        .map(|i| {
            cal.iter()
                .map(|(_, v)| match v {
                    Value::Array(a) => a.get(i).map(cell).unwrap_or(Cell::Null),
                    other => cell(other),
                })
                .collect()
        })
        .collect();
    Ok(Frame {
        index_name: None,
        index: (0..nrows).map(|i| Cell::Int(i as i128)).collect(),
        columns: cal.into_iter().map(|(k, _)| k).collect(),
        rows,
    })
}

// ---- statements ----

/// A statement (`balance_sheet`, `cashflow`, yearly or quarterly) from a
/// fundamentals-timeseries answer; any failure gives the empty frame, as yfinance
/// swallows it.
fn statement_frame(body: &str, prefix: &str, keys: &[&str]) -> Frame {
    statement(body, prefix, keys).unwrap_or(Frame {
        index_name: None,
        index: Vec::new(),
        columns: Vec::new(),
        rows: Vec::new(),
    })
}

fn statement(body: &str, prefix: &str, keys: &[&str]) -> Option<Frame> {
    let doc: Value = serde_json::from_str(body).ok()?;
    let results = doc.get("timeseries")?.get("result")?.as_array()?;
    let mut stamps: Vec<i64> = Vec::new();
    let mut data: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for entry in results {
        let o = entry.as_object()?;
        o.get("meta")?;
        for (k, v) in o {
            match k.as_str() {
                "meta" => {}
                "timestamp" => {
                    for t in v.as_array()? {
                        stamps.push(t.as_i64()?);
                    }
                }
                _ => {
                    // A missing point (`null`) fails yfinance's reshaping: empty frame.
                    let mut points = Vec::new();
                    for p in v.as_array()? {
                        let day = p.get("asOfDate")?.as_str()?.to_string();
                        let raw = p.get("reportedValue")?.get("raw")?;
                        points.push((day, raw.as_f64()?));
                    }
                    data.retain(|(name, _)| name != k);
                    data.push((k.clone(), points));
                }
            }
        }
    }
    stamps.sort_unstable();
    stamps.dedup();
    stamps.reverse();
    let days: Vec<String> = stamps
        .iter()
        .filter_map(|t| chrono::DateTime::from_timestamp(*t, 0))
        .map(|d| d.date_naive().format("%Y-%m-%d").to_string())
        .collect();
    let mut index = Vec::new();
    let mut rows = Vec::new();
    for key in keys {
        let name = format!("{prefix}{key}");
        let Some((_, points)) = data.iter().find(|(k, _)| *k == name) else {
            continue;
        };
        index.push(Cell::Text((*key).to_string()));
        // numpy scalars: tabulate formats them all as floats.
        rows.push(
            days.iter()
                .map(|d| {
                    let v = points
                        .iter()
                        .filter(|(p, _)| p == d)
                        .map(|(_, v)| *v)
                        .next_back()
                        .unwrap_or(f64::NAN);
                    Cell::Float(v)
                })
                .collect(),
        );
    }
    Some(Frame {
        index_name: None,
        index,
        columns: days.iter().map(|d| format!("{d} 00:00:00")).collect(),
        rows,
    })
}

// ---- news ----

/// `pd.DataFrame(ticker.news)` from an `xhr/ncp` answer: ads dropped, one column per
/// key in order of appearance, a missing key NaN.
fn news_frame(body: &str) -> Result<Frame, String> {
    if body.contains("Will be right back") {
        return Err("*** YAHOO! FINANCE IS CURRENTLY DOWN! ***\nOur engineers are working quickly to resolve the issue. Thank you for your patience.".into());
    }
    let doc: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let items: Vec<&Map<String, Value>> = doc
        .get("data")
        .and_then(|d| d.get("tickerStream"))
        .and_then(|t| t.get("stream"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .filter(|o| !o.get("ad").is_some_and(truthy))
                .collect()
        })
        .unwrap_or_default();
    let mut columns: Vec<String> = Vec::new();
    for o in &items {
        for k in o.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    Ok(Frame {
        index_name: None,
        index: (0..items.len()).map(|i| Cell::Int(i as i128)).collect(),
        rows: items
            .iter()
            .map(|o| {
                columns
                    .iter()
                    .map(|c| {
                        o.get(c)
                            .map(cell)
                            .unwrap_or_else(|| Cell::Text("nan".into()))
                    })
                    .collect()
            })
            .collect(),
        columns,
    })
}

// ---- the session ----

/// One yfinance session: hosts, the client, the cookie and crumb.
struct Session {
    client: reqwest::Client,
    query1: String,
    query2: String,
    root: String,
    cookie: Option<String>,
    crumb: Option<String>,
}

impl Session {
    /// The cookie and crumb handshake (`_get_cookie_basic`, `_get_crumb_basic`).
    async fn open(call: &Call<'_>) -> Result<Session, String> {
        let env = call.env();
        let base = env
            .var(BASE_VAR)
            .map(|b| b.trim_end_matches('/').to_string());
        let client = env
            .net
            .client(&ClientOptions {
                timeout: Some(TIMEOUT),
                proxy: None,
                follow_redirects: true,
                user_agent: Some(BROWSER_UA.to_string()),
            })
            .map_err(|e| e.to_string())?;
        let mut s = Session {
            client,
            query1: base.clone().unwrap_or_else(|| QUERY1.into()),
            query2: base.clone().unwrap_or_else(|| QUERY2.into()),
            root: base.unwrap_or_else(|| ROOT.into()),
            cookie: None,
            crumb: None,
        };
        let cookie_url = env.base_url(COOKIE_VAR, COOKIE_URL);
        // Without a cookie yfinance goes on without a crumb.
        if let Ok(res) = s.client.get(&cookie_url).send().await {
            let pairs: Vec<String> = res
                .headers()
                .get_all(reqwest::header::SET_COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .filter_map(|v| v.split(';').next())
                .map(|p| p.trim().to_string())
                .filter(|p| p.contains('='))
                .collect();
            if !pairs.is_empty() {
                s.cookie = Some(pairs.join("; "));
            }
        }
        if let Some(cookie) = &s.cookie {
            let res = s
                .client
                .get(format!("{}/v1/test/getcrumb", s.query1))
                .header(reqwest::header::COOKIE, cookie)
                .send()
                .await
                .map_err(|e| describe(&e))?;
            let status = res.status().as_u16();
            let text = res.text().await.map_err(|e| describe(&e))?;
            if status == 429 || text.contains("Too Many Requests") {
                return Err(RATE_LIMITED.into());
            }
            if !text.is_empty() && !text.contains("<html>") {
                s.crumb = Some(text);
            }
        }
        Ok(s)
    }

    /// A request with the cookie and crumb; a 429 is the rate-limit error.
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<(u16, String), String> {
        let mut req = req;
        if let Some(c) = &self.crumb {
            req = req.query(&[("crumb", c.as_str())]);
        }
        if let Some(c) = &self.cookie {
            req = req.header(reqwest::header::COOKIE, c);
        }
        let res = req.send().await.map_err(|e| describe(&e))?;
        let status = res.status().as_u16();
        let body = res.text().await.map_err(|e| describe(&e))?;
        if status == 429 {
            return Err(RATE_LIMITED.into());
        }
        Ok((status, body))
    }

    async fn get(&self, url: &str, query: &[(&str, String)]) -> Result<(u16, String), String> {
        self.send(self.client.get(url).query(query)).await
    }

    /// `get_raw_json`: `None` for an error status (yfinance logs it and goes on).
    async fn raw_json(&self, url: &str, query: &[(&str, String)]) -> Result<Option<Value>, String> {
        let (status, body) = self.get(url, query).await?;
        if status >= 400 {
            return Ok(None);
        }
        parse_json(&body).map(Some)
    }

    /// A symbol as a URL path segment.
    fn path(&self, host: &str, prefix: &str, symbol: &str) -> Result<reqwest::Url, String> {
        let mut url = reqwest::Url::parse(&format!("{host}{prefix}")).map_err(|e| e.to_string())?;
        url.path_segments_mut()
            .map_err(|_| "bad Yahoo base URL".to_string())?
            .push(symbol);
        Ok(url)
    }

    async fn info(&self, symbol: &str) -> Result<String, String> {
        let url = self.path(&self.query2, "/v10/finance/quoteSummary", symbol)?;
        let summary = self
            .raw_json(
                url.as_str(),
                &[
                    ("modules", INFO_MODULES.into()),
                    ("corsDomain", "finance.yahoo.com".into()),
                    ("formatted", "false".into()),
                    ("symbol", symbol.into()),
                ],
            )
            .await?;
        let quote = self
            .raw_json(
                &format!("{}/v7/finance/quote", self.query1),
                &[("symbols", symbol.into()), ("formatted", "false".into())],
            )
            .await?;
        let mut info = merge_info(summary.as_ref(), quote.as_ref(), symbol)?;
        // `_fetch_complementary`: the trailing PEG ratio over the last half year.
        let now = chrono::Utc::now().timestamp();
        let day = 86_400;
        let start = now - now.rem_euclid(day) - 182 * day;
        let end = now + (day - now.rem_euclid(day)) % day;
        let url = self.path(
            &self.query1,
            "/ws/fundamentals-timeseries/v1/finance/timeseries",
            symbol,
        )?;
        let (_, body) = self
            .get(
                url.as_str(),
                &[
                    ("symbol", symbol.into()),
                    ("type", "trailingPegRatio".into()),
                    ("period1", start.to_string()),
                    ("period2", end.to_string()),
                ],
            )
            .await?;
        info.insert("trailingPegRatio".into(), peg_ratio(&body)?);
        Ok(info_frame(&info).to_markdown())
    }

    async fn history(&self, symbol: &str) -> Result<String, String> {
        let url = self.path(&self.query2, "/v8/finance/chart", symbol)?;
        let (_, body) = self
            .get(
                url.as_str(),
                &[
                    ("range", "1mo".into()),
                    ("interval", "1d".into()),
                    ("includePrePost", "False".into()),
                    ("events", "div,splits,capitalGains".into()),
                ],
            )
            .await?;
        Ok(history_frame(&body).to_markdown())
    }

    async fn calendar(&self, symbol: &str) -> Result<String, String> {
        let url = self.path(&self.query2, "/v10/finance/quoteSummary", symbol)?;
        let doc = self
            .raw_json(
                url.as_str(),
                &[
                    ("modules", "calendarEvents".into()),
                    ("corsDomain", "finance.yahoo.com".into()),
                    ("formatted", "false".into()),
                    ("symbol", symbol.into()),
                ],
            )
            .await?;
        Ok(calendar_frame(doc.as_ref())?.to_markdown())
    }

    async fn statement(&self, symbol: &str, prefix: &str, keys: &[&str]) -> Result<String, String> {
        let url = self.path(
            &self.query2,
            "/ws/fundamentals-timeseries/v1/finance/timeseries",
            symbol,
        )?;
        let types: Vec<String> = keys.iter().map(|k| format!("{prefix}{k}")).collect();
        let now = chrono::Utc::now().timestamp();
        let end = now + (86_400 - now.rem_euclid(86_400)) % 86_400;
        // yfinance swallows every failure here, the rate limit included.
        let body = match self
            .get(
                url.as_str(),
                &[
                    ("symbol", symbol.into()),
                    ("type", types.join(",")),
                    ("period1", STATEMENTS_START.to_string()),
                    ("period2", end.to_string()),
                ],
            )
            .await
        {
            Ok((_, body)) => body,
            Err(_) => String::new(),
        };
        Ok(statement_frame(&body, prefix, keys).to_markdown())
    }

    async fn news(&self, symbol: &str) -> Result<String, String> {
        let url = format!("{}/xhr/ncp", self.root);
        let req = self
            .client
            .post(&url)
            .query(&[("queryRef", "latestNews"), ("serviceKey", "ncp_fin")])
            .json(&json!({"serviceConfig": {"snippetCount": 10, "s": [symbol]}}));
        let (_, body) = self.send(req).await?;
        Ok(news_frame(&body)?.to_markdown())
    }
}

impl YahooFinance {
    /// One attempt: every enabled section, in RAGFlow's order.
    async fn report(&self, call: &Call<'_>, symbol: &str) -> Result<String, String> {
        let s = Session::open(call).await?;
        let sec = self.sections;
        let mut parts: Vec<String> = Vec::new();
        if sec.info {
            parts.push(format!("# Information:\n{}\n", s.info(symbol).await?));
        }
        if sec.history {
            parts.push(format!("# History:\n{}\n", s.history(symbol).await?));
        }
        if sec.financials {
            parts.push(format!("# Calendar:\n{}\n", s.calendar(symbol).await?));
        }
        if sec.balance_sheet {
            let y = s.statement(symbol, "annual", BALANCE_SHEET_KEYS).await?;
            parts.push(format!("# Balance sheet:\n{y}\n"));
            let q = s.statement(symbol, "quarterly", BALANCE_SHEET_KEYS).await?;
            parts.push(format!("# Quarterly balance sheet:\n{q}\n"));
        }
        if sec.cash_flow_statement {
            let y = s.statement(symbol, "annual", CASH_FLOW_KEYS).await?;
            parts.push(format!("# Cash flow statement:\n{y}\n"));
            let q = s.statement(symbol, "quarterly", CASH_FLOW_KEYS).await?;
            parts.push(format!("# Quarterly cash flow statement:\n{q}\n"));
        }
        if sec.news {
            parts.push(format!("# News:\n{}\n", s.news(symbol).await?));
        }
        Ok(parts.join("\n\n"))
    }
}

#[async_trait]
impl Tool for YahooFinance {
    crate::tool_facts!("YahooFinance", outputs: ["report"], env: [BASE_VAR, COOKIE_VAR]);

    fn thoughts(&self, args: &Object) -> String {
        let code = args
            .get("stock_code")
            .map(py_str)
            .unwrap_or_else(|| "-_-!".into());
        format!("Pulling live financial data for `{code}`.")
    }

    async fn run(&self, call: &Call<'_>, args: &Object) -> CResult<Option<Value>> {
        let code = args
            .get("stock_code")
            .filter(|v| truthy(v))
            .map(py_str)
            .unwrap_or_default();
        if code.is_empty() {
            call.set_output("report", json!(""));
            return Ok(Some(json!("")));
        }
        // `yf.Ticker` upper-cases the symbol.
        let symbol = code.to_uppercase();
        match with_retries(call, || self.report(call, &symbol)).await {
            Ok(text) => {
                call.set_output("report", json!(text));
                Ok(Some(json!(text)))
            }
            Err(e) => {
                call.set_output("_ERROR", json!(e));
                Ok(Some(json!(format!("YahooFinance error: {e}"))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn check_wants_booleans() {
        assert!(build(&obj(json!({"history": true, "news": false}))).is_ok());
        assert_eq!(
            build(&obj(json!({"balance_sheet": "yes"})))
                .err()
                .unwrap()
                .to_string(),
            "balance sheet yes not supported, should be bool type"
        );
        assert_eq!(
            build(&obj(json!({"count": 1}))).err().unwrap().to_string(),
            "show share count 1 not supported, should be bool type"
        );
    }

    #[test]
    fn thoughts_name_the_stock() {
        let t = build(&Object::new()).unwrap();
        assert_eq!(
            t.thoughts(&obj(json!({"stock_code": "AAPL"}))),
            "Pulling live financial data for `AAPL`."
        );
        assert_eq!(
            t.thoughts(&Object::new()),
            "Pulling live financial data for `-_-!`."
        );
    }

    #[test]
    fn info_merges_modules_and_quote_as_yfinance() {
        let summary = json!({"quoteSummary": {"result": [{
            "financialData": {"maxAge": 86400, "currentPrice": 189.5, "recommendationKey": "buy"},
            "quoteType": {"exchange": "NMS", "quoteType": "EQUITY", "maxAge": 1},
            "assetProfile": {"city": "Cupertino", "fullTimeEmployees": 150000,
                "companyOfficers": [{"name": "Tim", "age": null, "totalPay": {"raw": 5, "fmt": "5"}}],
                "irWebsite": null},
        }], "error": null}});
        let quote = json!({"quoteResponse": {"result": [{
            "language": "en-US", "quoteType": "EQUITY", "tradeable": false,
            "longName": "Apple\u{a0}Inc.", "symbol": "AAPL"}], "error": null}});
        let info = merge_info(Some(&summary), Some(&quote), "AAPL").unwrap();
        let keys: Vec<&str> = info.keys().map(String::as_str).collect();
        // The quote's `quoteType` string replaces the module in place (its keys lost).
        assert_eq!(
            keys,
            [
                "maxAge",
                "currentPrice",
                "recommendationKey",
                "quoteType",
                "city",
                "fullTimeEmployees",
                "companyOfficers",
                "symbol",
                "language",
                "tradeable",
                "longName"
            ]
        );
        assert_eq!(info["maxAge"], json!(86400));
        assert_eq!(info["longName"], json!("Apple Inc."));
        assert_eq!(
            info["companyOfficers"],
            json!([{"name": "Tim", "age": null, "totalPay": 5}])
        );
        // A failed summary leaves the quote alone; a null result is Python's TypeError.
        let only_quote = merge_info(None, Some(&quote), "AAPL").unwrap();
        assert_eq!(only_quote.len(), 5);
        assert!(
            merge_info(Some(&json!({"quoteSummary": {"result": null}})), None, "X")
                .unwrap_err()
                .contains("NoneType")
        );
    }

    #[test]
    fn info_renders_as_a_series() {
        let mut info = Map::new();
        info.insert("city".into(), json!("Cupertino"));
        info.insert("fullTimeEmployees".into(), json!(150000));
        info.insert("beta".into(), json!(1.25));
        info.insert("officers".into(), json!([{"name": "Tim", "age": null}]));
        info.insert("trailingPegRatio".into(), Value::Null);
        // pandas: `pd.Series(d).to_markdown()`.
        assert_eq!(
            info_frame(&info).to_markdown(),
            "|                   | 0                              |\n\
             |:------------------|:-------------------------------|\n\
             | city              | Cupertino                      |\n\
             | fullTimeEmployees | 150000                         |\n\
             | beta              | 1.25                           |\n\
             | officers          | [{'name': 'Tim', 'age': None}] |\n\
             | trailingPegRatio  |                                |"
        );
    }

    #[test]
    fn peg_ratio_takes_the_last_value() {
        let body = r#"{"timeseries": {"result": [{"meta": {}, "timestamp": [1, 2],
            "trailingPegRatio": [{"reportedValue": {"raw": 1.1}}, {"reportedValue": {"raw": 2.05}}]}],
            "error": null}}"#;
        assert_eq!(peg_ratio(body).unwrap(), json!(2.05));
        assert_eq!(
            peg_ratio(r#"{"timeseries": {"result": [{"meta": {}}], "error": null}}"#).unwrap(),
            Value::Null
        );
        assert_eq!(
            peg_ratio("").unwrap_err(),
            "Expecting value: line 1 column 1 (char 0)"
        );
    }

    fn chart() -> Value {
        // 2024-05-01 and 2024-05-02, 13:30 UTC (09:30 New York), a dividend on the 2nd.
        json!({"chart": {"result": [{
            "meta": {"currency": "USD", "symbol": "AAPL", "gmtoffset": -14400,
                     "exchangeTimezoneName": "America/New_York", "validRanges": ["1d", "1mo"]},
            "timestamp": [1714570200, 1714656600],
            "events": {"dividends": {"1714656600": {"amount": 0.25, "date": 1714656600}}},
            "indicators": {
                "quote": [{"open": [169.58, 172.51], "high": [172.71, 173.42],
                           "low": [169.11, 170.89], "close": [169.3, 173.03],
                           "volume": [50383100, 94214900]}],
                "adjclose": [{"adjclose": [168.3, 173.03]}]}}], "error": null}})
    }

    #[test]
    fn history_is_adjusted_and_dated_in_exchange_time() {
        let md = history_frame(&chart().to_string()).to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[0],
            "| Date                      |    Open |   High |     Low |   Close |      Volume |   Dividends |   Stock Splits |"
        );
        assert_eq!(
            lines[1],
            "|:--------------------------|--------:|-------:|--------:|--------:|------------:|------------:|---------------:|"
        );
        // Open 169.58 × 168.3/169.3 = 168.578…; volume as a float, pandas' `.values`.
        assert_eq!(
            lines[2],
            "| 2024-05-01 00:00:00-04:00 | 168.578 | 171.69 | 168.111 |  168.3  | 5.03831e+07 |        0    |              0 |"
        );
        assert!(lines[3].starts_with("| 2024-05-02 00:00:00-04:00 | 172.51  | 173.42 | 170.89  |  173.03 | 9.42149e+07 |        0.25 |"));
    }

    #[test]
    fn history_without_prices_is_the_empty_frame() {
        let err = json!({"chart": {"result": null, "error": {"code": "Not Found", "description": "No data found, symbol may be delisted"}}});
        assert_eq!(
            history_frame(&err.to_string()).to_markdown(),
            "| Date   | Open   | High   | Low   | Close   | Adj Close   | Volume   |\n\
             |--------|--------|--------|-------|---------|-------------|----------|"
        );
        assert_eq!(
            history_frame("<html>").to_markdown(),
            empty_history().to_markdown()
        );
    }

    #[test]
    fn calendar_repeats_scalars_on_each_earnings_date() {
        let doc = json!({"quoteSummary": {"result": [{"calendarEvents": {
            "maxAge": 1, "dividendDate": 1715817600, "exDividendDate": 1715558400,
            "earnings": {"earningsDate": [1722470400, 1722902400], "earningsHigh": 1.5,
                "earningsLow": 1.3, "earningsAverage": 1.35, "revenueHigh": 86000000000i64,
                "revenueLow": 82000000000i64, "revenueAverage": 84000000000i64}}}], "error": null}});
        let md = calendar_frame(Some(&doc)).unwrap().to_markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines[0],
            "|    | Dividend Date   | Ex-Dividend Date   | Earnings Date   |   Earnings High |   Earnings Low |   Earnings Average |   Revenue High |   Revenue Low |   Revenue Average |"
        );
        assert_eq!(
            lines[2],
            "|  0 | 2024-05-16      | 2024-05-13         | 2024-08-01      |             1.5 |            1.3 |               1.35 |    86000000000 |   82000000000 |       84000000000 |"
        );
        assert!(
            lines[3].starts_with("|  1 | 2024-05-16      | 2024-05-13         | 2024-08-06      |")
        );
        // No calendar: an empty frame; only dividend dates: pandas refuses scalars.
        assert_eq!(calendar_frame(None).unwrap().to_markdown(), "||");
        let only_div =
            json!({"quoteSummary": {"result": [{"calendarEvents": {"dividendDate": 1715817600}}]}});
        assert_eq!(
            calendar_frame(Some(&only_div)).err().unwrap(),
            "If using all scalar values, you must pass an index"
        );
    }

    #[test]
    fn statements_pivot_dates_newest_first() {
        let body = json!({"timeseries": {"result": [
            {"meta": {"type": ["annualTotalAssets"]}, "timestamp": [1664496000, 1696032000],
             "annualTotalAssets": [
                {"asOfDate": "2022-09-30", "reportedValue": {"raw": 352755000000i64, "fmt": "352.76B"}},
                {"asOfDate": "2023-09-30", "reportedValue": {"raw": 352583000000i64, "fmt": "352.58B"}}]},
            {"meta": {"type": ["annualTreasurySharesNumber"]}, "timestamp": [1664496000],
             "annualTreasurySharesNumber": [
                {"asOfDate": "2022-09-30", "reportedValue": {"raw": 0.0, "fmt": "0"}}]},
            {"meta": {"type": ["annualGoodwill"]}}
        ], "error": null}});
        let md = statement_frame(&body.to_string(), "annual", BALANCE_SHEET_KEYS).to_markdown();
        assert_eq!(
            md,
            "|                      |   2023-09-30 00:00:00 |   2022-09-30 00:00:00 |\n\
             |:---------------------|----------------------:|----------------------:|\n\
             | TreasurySharesNumber |         nan           |           0           |\n\
             | TotalAssets          |           3.52583e+11 |           3.52755e+11 |"
        );
        // A missing point fails yfinance's reshaping: an empty frame, not an error.
        let gap = json!({"timeseries": {"result": [{"meta": {}, "timestamp": [1],
            "annualTotalAssets": [null]}]}});
        assert_eq!(
            statement_frame(&gap.to_string(), "annual", BALANCE_SHEET_KEYS).to_markdown(),
            "||"
        );
        assert_eq!(
            statement_frame("", "annual", CASH_FLOW_KEYS).to_markdown(),
            "||"
        );
    }

    #[test]
    fn news_drops_ads_and_shows_content_as_python_dicts() {
        let body = json!({"data": {"tickerStream": {"stream": [
            {"id": "a1", "content": {"title": "Apple up", "provider": {"displayName": "Reuters"}, "isHosted": true}},
            {"id": "ad", "ad": [{"x": 1}], "content": {}},
            {"id": "a2", "content": {"title": "Apple down", "summary": null}}
        ]}}});
        let md = news_frame(&body.to_string()).unwrap().to_markdown();
        assert_eq!(
            md,
            "|    | id   | content                                                                         |\n\
             |---:|:-----|:--------------------------------------------------------------------------------|\n\
             |  0 | a1   | {'title': 'Apple up', 'provider': {'displayName': 'Reuters'}, 'isHosted': True} |\n\
             |  1 | a2   | {'title': 'Apple down', 'summary': None}                                        |"
        );
        assert_eq!(news_frame("not json").unwrap().to_markdown(), "||");
        assert!(
            news_frame("<p>Will be right back</p>")
                .unwrap_err()
                .contains("YAHOO! FINANCE IS CURRENTLY DOWN")
        );
    }
}
