// A creator in Shanghai, reading the console in Chinese: once the tenant's
// time zone is Asia/Shanghai, every time shows at UTC+8 and the share's
// date fields say which zone they are in. The spec's own tenant is
// changed: no other spec running beside it sees its times move.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, specTenant, sql } from "./course";

test.use({ locale: "zh-CN" });

test("a zh-CN tenant in Asia/Shanghai sees local times", async ({ page }) => {
  test.setTimeout(60_000);
  const course = await createCourse(await adminApi(), { codes: 1 });
  const owner = await specTenant();
  const tenant = owner.id;
  await openHydrated(page, `/login?next=/admin/t/${tenant}/team`);
  await page.getByLabel("邮箱").fill(owner.email);
  await page.getByLabel("密码").fill(owner.password);
  await page.getByRole("button", { name: "登录" }).click();
  await expect(page.getByLabel("时区")).toHaveValue("UTC");

  await page.getByLabel("时区").fill("Asia/Shanghai");
  await page.getByRole("button", { name: "保存设置" }).click();
  await expect.poll(() => sql(`SELECT time_zone FROM tenants WHERE id = '${tenant}'`)).toBe("Asia/Shanghai");

  // The audit log: the change just made, at its Shanghai time.
  const local = sql(
    `SELECT to_char(created_at AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM-DD HH24:MI') FROM audit_log
     WHERE tenant_id = '${tenant}' AND action = 'tenant.settings_changed' ORDER BY created_at DESC LIMIT 1`,
  );
  await openHydrated(page, `/admin/t/${tenant}/audit`);
  await expect(page.getByText(`${local} UTC+8`).first()).toBeVisible();

  // The share's editor: its batch's time and its date fields in the zone.
  const issued = sql(
    `SELECT to_char(created_at AT TIME ZONE 'Asia/Shanghai', 'YYYY-MM-DD HH24:MI') FROM code_batches
     WHERE share_id = '${course.id}' ORDER BY created_at DESC LIMIT 1`,
  );
  await openHydrated(page, `/admin/t/${tenant}/s/${course.id}`);
  await expect(page.getByText(`${issued} UTC+8`).first()).toBeVisible();
  await expect(page.getByLabel("结束时间（Asia/Shanghai）")).toBeVisible();
});
